/* flamegraph.c: writes a profile as a self-contained interactive SVG flame graph (hover, click to zoom, search). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define FG_WIDTH	1200.0
#define FG_PAD		10.0
#define FG_FRAME_H	16
#define FG_TOP		64	/* title, buttons */
#define FG_BOTTOM	32	/* details line */
#define FG_FONT_PX	11
#define FG_CHAR_W	(FG_FONT_PX * 0.6)	/* monospace advance */
#define FG_MIN_PX	0.1	/* narrower frames are left out, as flamegraph.pl does */

enum kind { K_NATIVE, K_JIT, K_KERNEL, K_LABEL, K_ROOT };

struct node {
	const char *name;	/* interned in the profile, so equal names are equal pointers */
	uint64_t total;		/* inclusive samples */
	uint64_t start;		/* offset in samples from the left edge */
	uint32_t parent;
	uint32_t depth;
	uint8_t kind;
};

struct tree {
	struct node *nodes;
	size_t n, cap;
	uint32_t *slots;	/* (parent, name) -> node index + 1, open addressing */
	size_t mask;
	size_t used;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dULL;
	x ^= x >> 33;
	return x;
}

static size_t child_hash(uint32_t parent, const char *name)
{
	return (size_t)mix64((uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ULL ^ parent);
}

static int tree_grow(struct tree *t)
{
	size_t cap = t->slots ? (t->mask + 1) * 2 : 1024, i, j;
	uint32_t *ns = calloc(cap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (i = 0; t->slots && i <= t->mask; i++) {
		const struct node *nd;

		if (!t->slots[i])
			continue;
		nd = &t->nodes[t->slots[i] - 1];
		for (j = child_hash(nd->parent, nd->name) & (cap - 1); ns[j]; j = (j + 1) & (cap - 1))
			;
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->mask = cap - 1;
	return 0;
}

/* Returns the index of parent's child called name, created if new, or -errno. */
static int64_t tree_child(struct tree *t, uint32_t parent, const char *name, uint8_t kind)
{
	size_t i;
	struct node *nd;

	if (!t->slots || (t->used + 1) * 4 > (t->mask + 1) * 3) {
		int err = tree_grow(t);

		if (err)
			return err;
	}
	for (i = child_hash(parent, name) & t->mask; t->slots[i]; i = (i + 1) & t->mask) {
		nd = &t->nodes[t->slots[i] - 1];
		if (nd->parent == parent && nd->name == name)
			return t->slots[i] - 1;
	}
	if (t->n >= UINT32_MAX - 1)
		return -ENOSPC;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct node *nn = realloc(t->nodes, cap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		t->nodes = nn;
		t->cap = cap;
	}
	nd = &t->nodes[t->n];
	memset(nd, 0, sizeof(*nd));
	nd->name = name;
	nd->parent = parent;
	nd->depth = t->nodes[parent].depth + 1;
	nd->kind = kind;
	t->slots[i] = (uint32_t)(++t->n);
	t->used++;
	return (int64_t)t->n - 1;
}

static uint8_t *location_kinds(const struct profile *p)
{
	size_t n = profile__location_count(p), i;
	uint8_t *kinds = calloc(n + 1, 1);
	struct pf_location_view lv;
	struct pf_mapping m;

	if (!kinds)
		return NULL;
	for (i = 1; i <= n; i++) {
		if (profile__location_get(p, (uint32_t)i, &lv) || !lv.mapping_id ||
		    profile__mapping_get(p, lv.mapping_id, &m))
			continue;
		if (m.is_jit)
			kinds[i] = K_JIT;
		else if (strncmp(m.filename, "[kernel", 7) == 0 || strcmp(m.filename, "[vmlinux]") == 0)
			kinds[i] = K_KERNEL;
	}
	return kinds;
}

static int tree_build(const struct profile *p, const char *root_key, struct tree *t)
{
	size_t n = profile__sample_count(p), i, j;
	uint8_t *kinds = location_kinds(p);
	struct pf_sample_view v;
	int64_t cur;
	int err = 0;

	if (!kinds)
		return -ENOMEM;
	t->cap = 1024;
	t->nodes = calloc(t->cap, sizeof(*t->nodes));
	if (!t->nodes) {
		err = -ENOMEM;
		goto free_kinds;
	}
	t->nodes[0].name = "all";
	t->nodes[0].kind = K_ROOT;
	t->n = 1;

	for (i = 0; i < n; i++) {
		const char *root = NULL;

		err = profile__sample(p, i, &v);
		if (err)
			goto free_kinds;
		t->nodes[0].total += v.count;
		cur = 0;
		if (root_key)
			root = profile__label(&v, root_key);
		if (root) {
			cur = tree_child(t, (uint32_t)cur, root, K_LABEL);
			if (cur < 0)
				goto fail;
			t->nodes[cur].total += v.count;
		}
		for (j = v.n_locs; j > 0; j--) {	/* leaf first in the profile */
			const char *name = profile__location_name(p, v.locs[j - 1]);

			cur = tree_child(t, (uint32_t)cur, name ? name : "[unknown]",
					 kinds[v.locs[j - 1]]);
			if (cur < 0)
				goto fail;
			t->nodes[cur].total += v.count;
		}
	}
	goto free_kinds;
fail:
	err = (int)cur;
free_kinds:
	free(kinds);
	return err;
}

static int by_parent_then_name(const void *a, const void *b, void *arg)
{
	const struct node *nodes = arg;
	const struct node *x = &nodes[*(const uint32_t *)a], *y = &nodes[*(const uint32_t *)b];
	int c;

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	c = strcmp(x->name, y->name);
	return c < 0 ? -1 : c > 0;
}

/*
 * Children sit side by side in name order inside their parent. A parent is always created
 * before its children, so sorted by parent index, every parent is placed before its children.
 */
static uint32_t *tree_layout(struct tree *t)
{
	uint32_t *order = malloc(t->n * sizeof(*order));
	uint64_t next = 0;
	uint32_t i, parent = UINT32_MAX;

	if (!order)
		return NULL;
	for (i = 0; i < t->n; i++)
		order[i] = i;
	qsort_r(order + 1, t->n - 1, sizeof(*order), by_parent_then_name, t->nodes);
	for (i = 1; i < t->n; i++) {
		struct node *nd = &t->nodes[order[i]];

		if (nd->parent != parent) {
			parent = nd->parent;
			next = t->nodes[parent].start;
		}
		nd->start = next;
		next += nd->total;
	}
	return order;
}

/* ---- SVG output ---------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s, or 0 if s does not start one. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	}
	if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
	    (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
		return 0;	/* overlong, surrogate, beyond U+10FFFF */
	return n;
}

/*
 * Writes s as XML character data or attribute text, cut to max_chars characters with ".."
 * when longer (0: no limit). Bytes XML 1.0 cannot carry (controls, broken UTF-8) become '?'.
 */
static void xml_put(FILE *f, const char *s, size_t max_chars)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t total = 0, limit, n, len;
	int cut;

	for (n = 0; u[n]; n += len ? len : 1, total++)
		len = utf8_len(u + n);
	cut = max_chars && total > max_chars;
	limit = cut ? (max_chars > 2 ? max_chars - 2 : 0) : total;
	for (n = 0; *u && n < limit; n++, u += len ? len : 1) {
		len = utf8_len(u);
		switch (*u) {
		case '&': fputs("&amp;", f); continue;
		case '<': fputs("&lt;", f); continue;
		case '>': fputs("&gt;", f); continue;
		case '"': fputs("&quot;", f); continue;
		case '\'': fputs("&apos;", f); continue;
		default: break;
		}
		if (!len || *u < 0x20)	/* tab and newline too: names are one line */
			fputc('?', f);
		else
			fwrite(u, 1, len, f);
	}
	if (cut)
		fputs("..", f);
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h ^ (h >> 15);
}

/* A stable colour per name; the family tells managed (.NET JIT), kernel and native code apart. */
static void frame_colour(const struct node *nd, char *out, size_t len)
{
	uint32_t h = name_hash(nd->name);
	unsigned a = h % 64, b = (h >> 8) % 64, c = (h >> 16) % 64;

	switch (nd->kind) {
	case K_JIT:
		snprintf(out, len, "rgb(%u,%u,%u)", 60 + a, 170 + b / 2, 60 + c);
		break;
	case K_KERNEL:
		snprintf(out, len, "rgb(%u,%u,%u)", 220 + a / 2, 140 + b / 2, 20 + c / 2);
		break;
	case K_LABEL:
		snprintf(out, len, "rgb(%u,%u,%u)", 140 + a, 130 + b, 210 + c / 2);
		break;
	case K_ROOT:
		snprintf(out, len, "rgb(190,190,190)");
		break;
	default:
		snprintf(out, len, "rgb(%u,%u,%u)", 200 + a / 2 + a / 4, 60 + b * 2, 40 + c / 2);
		break;
	}
}

static const char fg_style[] =
	"text{font-family:monospace;font-size:" "11" "px;fill:#000}\n"
	"#title{font-size:17px}\n"
	".btn{cursor:pointer;fill:#1a4d9c}\n"
	".btn:hover{text-decoration:underline}\n"
	"#frames g{cursor:pointer}\n"
	"#frames g:hover rect{stroke:#000;stroke-width:0.5}\n"
	"#frames text{pointer-events:none}\n"
	".parent{opacity:0.5}\n"
	".hidden{display:none}\n";

/* Plain ECMAScript, no libraries: the file must open offline and from any viewer. */
static const char fg_script[] =
	"(function(){\n"
	"var W=1200,PAD=10,CW=6.6;\n"
	"var frames=document.getElementById('frames'),details=document.getElementById('details');\n"
	"var matched=document.getElementById('matched'),reset=document.getElementById('reset');\n"
	"var gs=frames.getElementsByTagName('g'),all=[],total=0,term=null;\n"
	"for(var i=0;i<gs.length;i++){var g=gs[i],t=g.getElementsByTagName('title')[0].textContent;\n"
	" var f={g:g,r:g.getElementsByTagName('rect')[0],x:g.getElementsByTagName('text')[0],\n"
	"  s:+g.getAttribute('data-s'),n:+g.getAttribute('data-n'),d:+g.getAttribute('data-d'),\n"
	"  info:t,name:t.slice(0,t.lastIndexOf(' (')),fill:null};\n"
	" g.fg=f;all.push(f);if(f.d===0)total=f.n;}\n"
	"function label(f,w){var m=Math.floor((w-6)/CW);\n"
	" if(m<3)return '';if(f.name.length<=m)return f.name;return f.name.slice(0,m-2)+'..';}\n"
	"function zoom(z){var zs=z?z.s:0,zn=z?z.n:total,zd=z?z.d:0,sc=(W-2*PAD)/zn;\n"
	" for(var i=0;i<all.length;i++){var f=all[i],c=f.g.classList,x,w;\n"
	"  c.remove('hidden');c.remove('parent');\n"
	"  if(f.d<zd){if(f.s<=zs&&f.s+f.n>=zs+zn){x=PAD;w=W-2*PAD;c.add('parent');}else{c.add('hidden');continue;}}\n"
	"  else if(f.s>=zs&&f.s+f.n<=zs+zn){x=PAD+(f.s-zs)*sc;w=f.n*sc;}\n"
	"  else{c.add('hidden');continue;}\n"
	"  if(w<0.1&&f.d>zd){c.add('hidden');continue;}\n"
	"  f.r.setAttribute('x',x.toFixed(2));f.r.setAttribute('width',w.toFixed(2));\n"
	"  f.x.setAttribute('x',(x+3).toFixed(2));f.x.textContent=label(f,w);}\n"
	" reset.classList.toggle('hidden',!z);}\n"
	"function esc(s){return s.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&');}\n"
	"function search(t){term=t;var iv=[];\n"
	" var re=t?new RegExp(t):null;\n"
	" for(var i=0;i<all.length;i++){var f=all[i];\n"
	"  if(f.fill===null)f.fill=f.r.getAttribute('fill');\n"
	"  if(re&&re.test(f.name)){f.r.setAttribute('fill','rgb(230,0,230)');iv.push([f.s,f.s+f.n]);}\n"
	"  else f.r.setAttribute('fill',f.fill);}\n"
	" iv.sort(function(a,b){return a[0]-b[0];});var sum=0,end=-1;\n"
	" for(var j=0;j<iv.length;j++){var a=Math.max(iv[j][0],end);if(iv[j][1]>a)sum+=iv[j][1]-a;if(iv[j][1]>end)end=iv[j][1];}\n"
	" matched.textContent=re?'Matched: '+(total?100*sum/total:0).toFixed(2)+'% ('+sum+' samples)':'';\n"
	" document.getElementById('search').textContent=re?'Clear search':'Search';}\n"
	"function ask(){var t=prompt('Search frames (regular expression; a plain word matches anywhere):',term||'');\n"
	" if(t===null)return;if(t==='')return search(null);\n"
	" try{search(t);}catch(e){search(esc(t));}}\n"
	"frames.addEventListener('mouseover',function(e){var g=e.target.closest('g');if(g&&g.fg)details.textContent=g.fg.info;});\n"
	"frames.addEventListener('mouseout',function(){details.textContent=' ';});\n"
	"frames.addEventListener('click',function(e){var g=e.target.closest('g');if(g&&g.fg)zoom(g.fg.d?g.fg:null);});\n"
	"reset.addEventListener('click',function(){zoom(null);});\n"
	"document.getElementById('search').addEventListener('click',function(){if(term)search(null);else ask();});\n"
	"window.addEventListener('keydown',function(e){\n"
	" if((e.ctrlKey||e.metaKey)&&(e.key==='f'||e.key==='F')){e.preventDefault();ask();}\n"
	" else if(e.key==='Escape'){search(null);zoom(null);}});\n"
	"zoom(null);\n"
	"})();\n";

static void write_frame(FILE *f, const struct node *nd, uint64_t grand, int height)
{
	double scale = (FG_WIDTH - 2 * FG_PAD) / (double)grand;
	double x = FG_PAD + (double)nd->start * scale, w = (double)nd->total * scale;
	int y = height - FG_BOTTOM - ((int)nd->depth + 1) * FG_FRAME_H;
	long chars = (long)((w - 6) / FG_CHAR_W);
	char fill[32];

	frame_colour(nd, fill, sizeof(fill));
	fprintf(f, "<g data-s=\"%llu\" data-n=\"%llu\" data-d=\"%u\"><title>",
		(unsigned long long)nd->start, (unsigned long long)nd->total, nd->depth);
	xml_put(f, nd->name, 0);
	fprintf(f, " (%llu sample%s, %.2f%%)</title>", (unsigned long long)nd->total,
		nd->total == 1 ? "" : "s", 100.0 * (double)nd->total / (double)grand);
	fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"%s\"/>",
		x, y, w, FG_FRAME_H - 1, fill);
	fprintf(f, "<text x=\"%.2f\" y=\"%d\">", x + 3, y + FG_FRAME_H - 5);
	if (chars >= 3)
		xml_put(f, nd->name, (size_t)chars);
	fputs("</text></g>\n", f);
}

int flamegraph__write(const struct profile *p, FILE *f, const char *title, const char *root_key)
{
	struct tree t = { 0 };
	uint32_t *order = NULL;
	uint64_t grand, min_count;
	uint32_t max_depth = 0;
	size_t i, shown = 0;
	int err, height;

	if (!p || !f)
		return -EINVAL;
	err = tree_build(p, root_key, &t);
	if (err)
		goto free_tree;
	order = tree_layout(&t);
	if (!order) {
		err = -ENOMEM;
		goto free_tree;
	}
	grand = t.nodes[0].total;
	/* frames narrower than FG_MIN_PX are not drawn; their children are narrower still */
	min_count = (uint64_t)((double)grand * FG_MIN_PX / (FG_WIDTH - 2 * FG_PAD));
	for (i = 0; i < t.n; i++) {
		if (t.nodes[i].total >= min_count && t.nodes[i].total > 0) {
			shown++;
			if (t.nodes[i].depth > max_depth)
				max_depth = t.nodes[i].depth;
		}
	}
	if (grand == 0)
		max_depth = 0;
	height = FG_TOP + ((int)max_depth + 1) * FG_FRAME_H + FG_BOTTOM;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\">\n", (int)FG_WIDTH, height, (int)FG_WIDTH, height);
	fputs("<title>", f);
	xml_put(f, title ? title : "spanprof", 0);
	fprintf(f, "</title>\n<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", fg_style);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f6f6f3\"/>\n");
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">", (int)(FG_WIDTH / 2));
	xml_put(f, title ? title : "spanprof", 0);
	fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\" text-anchor=\"middle\">"
		"%llu samples, %zu frames%s%s%s; click to zoom, Ctrl-F to search</text>\n",
		(int)(FG_WIDTH / 2), (unsigned long long)grand, shown,
		shown < t.n ? " (" : "", shown < t.n ? "narrow ones hidden" : "", shown < t.n ? ")" : "");
	fprintf(f, "<text id=\"reset\" class=\"btn hidden\" x=\"%d\" y=\"24\">Reset zoom</text>\n",
		(int)FG_PAD);
	fprintf(f, "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n",
		(int)(FG_WIDTH - FG_PAD));
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", (int)FG_PAD, height - 12);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
		(int)(FG_WIDTH - FG_PAD), height - 12);
	fputs("<g id=\"frames\">\n", f);
	for (i = 0; grand && i < t.n; i++) {
		const struct node *nd = &t.nodes[order[i]];

		if (nd->total >= min_count)
			write_frame(f, nd, grand, height);
	}
	fputs("</g>\n", f);
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", fg_script);
	if (ferror(f) || fflush(f) != 0)
		err = -(errno ? errno : EIO);

free_tree:
	free(order);
	free(t.nodes);
	free(t.slots);
	return err;
}
