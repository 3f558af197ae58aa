/* flamegraph.c: writes a profile as a self-contained interactive SVG flame graph (hover, click to zoom, search). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "vec.h"

#define FG_WIDTH	1200.0
#define FG_PAD		10.0
#define FG_FRAME_H	16
#define FG_TOP		64	/* title, buttons */
#define FG_BOTTOM	32	/* details line */
#define FG_FONT_PX	11
#define FG_CHAR_W	(FG_FONT_PX * 0.6)	/* monospace advance */
#define FG_MIN_PX	0.1	/* narrower frames are left out, as flamegraph.pl does */

enum kind { K_NATIVE, K_JIT, K_KERNEL, K_LABEL, K_ROOT };

/*
 * The graph is laid out the way flamegraph.pl does it: sort the stacks (root first, frames
 * compared by name), then one sweep finds where neighbours stop sharing a prefix. A frame is
 * a run of sorted stacks, so no tree is stored: memory is one record per distinct sample plus
 * one open frame per depth, and names are compared as precomputed ranks, not strings.
 */
struct frame {
	const char *name;
	uint64_t start;		/* samples left of it */
	uint64_t total;		/* inclusive samples */
	uint32_t rank;
	uint32_t depth;		/* "all" is 0 */
	uint8_t kind;
};

struct rec {
	const uint32_t *locs;	/* leaf first, owned by the profile */
	uint32_t n_locs;
	uint32_t root_rank;	/* rank of the root label value, if root */
	const char *root;
	uint64_t count;
};

struct graph {
	const struct profile *p;
	struct rec *recs;
	size_t n_recs;
	uint32_t *loc_rank;	/* by location id */
	const char **loc_name;
	uint8_t *loc_kind;
	uint64_t grand;
	uint64_t min_count;	/* narrower frames are not drawn */
	struct frame *open;	/* the sweep's current prefix, by depth - 1 */
	size_t cap_open;
	/* filled by the sweep */
	size_t shown, hidden;
	uint32_t max_depth;
};

struct named {
	const char *s;
	uint32_t *rank_out;
};

static int named_cmp(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = x->s == y->s ? 0 : strcmp(x->s, y->s);

	return c < 0 ? -1 : c > 0;
}

static uint8_t location_kind(const struct profile *p, uint32_t id)
{
	struct pf_location_view lv;
	struct pf_mapping m;

	if (profile__location_get(p, id, &lv) || !lv.mapping_id ||
	    profile__mapping_get(p, lv.mapping_id, &m))
		return K_NATIVE;
	if (m.is_jit)
		return K_JIT;
	if (strncmp(m.filename, "[kernel", 7) == 0 || strcmp(m.filename, "[vmlinux]") == 0)
		return K_KERNEL;
	return K_NATIVE;
}

static int rec_cmp(const void *a, const void *b, void *arg);

static void graph_free(struct graph *g)
{
	free(g->recs);
	free(g->loc_rank);
	free(g->loc_name);
	free(g->loc_kind);
	free(g->open);
}

/* One rank space for location names and root label values: equal strings, equal ranks. */
static int graph_build(const struct profile *p, const char *root_key, struct graph *g)
{
	size_t n_locs = profile__location_count(p), n = profile__sample_count(p), i, k = 0;
	struct pf_sample_view v;
	struct named *names;
	uint32_t rank = 0;

	g->p = p;
	g->recs = calloc(n + 1, sizeof(*g->recs));
	g->loc_rank = calloc(n_locs + 1, sizeof(*g->loc_rank));
	g->loc_name = calloc(n_locs + 1, sizeof(*g->loc_name));
	g->loc_kind = calloc(n_locs + 1, sizeof(*g->loc_kind));
	names = calloc(n_locs + n + 1, sizeof(*names));
	if (!g->recs || !g->loc_rank || !g->loc_name || !g->loc_kind || !names) {
		free(names);
		return -ENOMEM;
	}
	for (i = 1; i <= n_locs; i++) {
		const char *name = profile__location_name(p, (uint32_t)i);

		g->loc_name[i] = name && *name ? name : "[unknown]";
		g->loc_kind[i] = location_kind(p, (uint32_t)i);
		names[k].s = g->loc_name[i];
		names[k++].rank_out = &g->loc_rank[i];
	}
	for (i = 0; i < n; i++) {
		struct rec *r = &g->recs[i];

		if (profile__sample(p, i, &v)) {
			free(names);
			return -EIO;
		}
		r->locs = v.locs;
		r->n_locs = (uint32_t)v.n_locs;
		r->count = profile__shown_value(p, &v);
		r->root = root_key ? profile__label(&v, root_key) : NULL;
		if (r->root) {
			names[k].s = r->root;
			names[k++].rank_out = &r->root_rank;
		}
		g->grand += r->count;
	}
	g->n_recs = n;
	qsort(names, k, sizeof(*names), named_cmp);
	for (i = 0; i < k; i++) {
		if (i && named_cmp(&names[i - 1], &names[i]) != 0)
			rank++;
		*names[i].rank_out = rank;
	}
	free(names);
	qsort_r(g->recs, g->n_recs, sizeof(*g->recs), rec_cmp, g);
	g->min_count = (uint64_t)((double)g->grand * FG_MIN_PX / (FG_WIDTH - 2 * FG_PAD));
	return 0;
}

typedef void (*emit_fn)(struct graph *g, const struct frame *fr, void *arg);

/* The i-th frame (root first) of a record: its root label, then its locations. */
static void rec_frame(const struct graph *g, const struct rec *r, uint32_t i, struct frame *out)
{
	uint32_t loc;

	if (r->root) {
		if (i == 0) {
			out->name = r->root;
			out->rank = r->root_rank;
			out->kind = K_LABEL;
			return;
		}
		i--;
	}
	loc = r->locs[r->n_locs - 1 - i];
	out->name = g->loc_name[loc];
	out->rank = g->loc_rank[loc];
	out->kind = g->loc_kind[loc];
}

/* Root first, frame by frame by name rank; a prefix sorts before its extensions. */
static int rec_cmp(const void *a, const void *b, void *arg)
{
	const struct rec *x = a, *y = b;
	const struct graph *g = arg;
	uint32_t nx = x->n_locs + (x->root ? 1 : 0), ny = y->n_locs + (y->root ? 1 : 0), i;
	struct frame fx, fy;

	for (i = 0; i < nx && i < ny; i++) {
		rec_frame(g, x, i, &fx);
		rec_frame(g, y, i, &fy);
		if (fx.rank != fy.rank)
			return fx.rank < fy.rank ? -1 : 1;
	}
	return nx < ny ? -1 : nx > ny;
}

static void close_frame(struct graph *g, const struct frame *fr, emit_fn emit, void *arg)
{
	if (fr->total < g->min_count) {
		g->hidden++;
		return;
	}
	g->shown++;
	if (fr->depth > g->max_depth)
		g->max_depth = fr->depth;
	if (emit)
		emit(g, fr, arg);
}

static int graph_sweep(struct graph *g, emit_fn emit, void *arg)
{
	struct frame all = { .name = "all", .total = g->grand, .kind = K_ROOT };
	uint32_t depth = 0, len, i, k;
	uint64_t offset = 0;
	struct frame fr;
	size_t r;

	g->shown = g->hidden = 0;
	g->max_depth = 0;
	close_frame(g, &all, emit, arg);	/* first, so the file starts with the root */
	for (r = 0; r < g->n_recs; r++) {
		const struct rec *rec = &g->recs[r];

		if (!rec->count)
			continue;	/* only the other value (CPU or off-CPU) */
		len = rec->n_locs + (rec->root ? 1 : 0);
		if (VEC_RESERVE(g->open, g->cap_open, len))
			return -ENOMEM;
		for (k = 0; k < depth && k < len; k++) {	/* the prefix shared with the open frames */
			rec_frame(g, rec, k, &fr);
			if (fr.rank != g->open[k].rank)
				break;
		}
		while (depth > k)
			close_frame(g, &g->open[--depth], emit, arg);
		for (i = k; i < len; i++) {
			rec_frame(g, rec, i, &g->open[i]);
			g->open[i].start = offset;
			g->open[i].total = 0;
			g->open[i].depth = i + 1;
		}
		depth = len;
		for (i = 0; i < len; i++)
			g->open[i].total += rec->count;
		offset += rec->count;
	}
	while (depth > 0)
		close_frame(g, &g->open[--depth], emit, arg);
	return 0;
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
static void frame_colour(const struct frame *nd, char *out, size_t len)
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

struct out {
	FILE *f;
	int height;
	int off_cpu;	/* widths are off-CPU nanoseconds, not samples */
};

static void write_frame(struct graph *g, const struct frame *nd, void *arg)
{
	const struct out *o = arg;
	double scale = (FG_WIDTH - 2 * FG_PAD) / (double)g->grand;
	double x = FG_PAD + (double)nd->start * scale, w = (double)nd->total * scale;
	int y = o->height - FG_BOTTOM - ((int)nd->depth + 1) * FG_FRAME_H;
	long chars = (long)((w - 6) / FG_CHAR_W);
	char fill[32];

	frame_colour(nd, fill, sizeof(fill));
	fprintf(o->f, "<g data-s=\"%llu\" data-n=\"%llu\" data-d=\"%u\"><title>",
		(unsigned long long)nd->start, (unsigned long long)nd->total, nd->depth);
	xml_put(o->f, nd->name, 0);
	fprintf(o->f, " (%llu %s, %.2f%%)</title>", (unsigned long long)nd->total,
		o->off_cpu ? "ns off-CPU" : nd->total == 1 ? "sample" : "samples", 100.0 * (double)nd->total / (double)g->grand);
	fprintf(o->f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"%s\"/>",
		x, y, w, FG_FRAME_H - 1, fill);
	fprintf(o->f, "<text x=\"%.2f\" y=\"%d\">", x + 3, y + FG_FRAME_H - 5);
	if (chars >= 3)
		xml_put(o->f, nd->name, (size_t)chars);
	fputs("</text></g>\n", o->f);
}

int flamegraph__write(const struct profile *p, FILE *f, const char *title, const char *root_key)
{
	struct graph g = { 0 };
	struct out o = { .f = f };
	const char *t = title ? title : "spanprof";
	int err;

	if (!p || !f)
		return -EINVAL;
	o.off_cpu = profile__opts(p)->show_off_cpu;
	err = graph_build(p, root_key, &g);
	if (!err)	/* a dry run first: the height depends on the deepest visible frame */
		err = graph_sweep(&g, NULL, NULL);
	if (err)
		goto free_graph;
	o.height = FG_TOP + ((int)g.max_depth + 1) * FG_FRAME_H + FG_BOTTOM;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\">\n", (int)FG_WIDTH, o.height, (int)FG_WIDTH, o.height);
	fputs("<title>", f);
	xml_put(f, t, 0);
	fprintf(f, "</title>\n<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", fg_style);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f6f6f3\"/>\n");
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">", (int)(FG_WIDTH / 2));
	xml_put(f, t, 0);
	fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\" text-anchor=\"middle\">"
		"%llu %s, %zu frames", (int)(FG_WIDTH / 2), (unsigned long long)g.grand,
		o.off_cpu ? "ns off-CPU" : "samples", g.shown);
	if (g.hidden)
		fprintf(f, " (%zu narrow ones hidden)", g.hidden);
	fputs("; click to zoom, Ctrl-F to search</text>\n", f);
	fprintf(f, "<text id=\"reset\" class=\"btn hidden\" x=\"%d\" y=\"24\">Reset zoom</text>\n",
		(int)FG_PAD);
	fprintf(f, "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n",
		(int)(FG_WIDTH - FG_PAD));
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", (int)FG_PAD, o.height - 12);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
		(int)(FG_WIDTH - FG_PAD), o.height - 12);
	fputs("<g id=\"frames\">\n", f);
	if (g.grand)
		err = graph_sweep(&g, write_frame, &o);
	fputs("</g>\n", f);
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", fg_script);
	if (!err && (ferror(f) || fflush(f) != 0))
		err = -(errno ? errno : EIO);

free_graph:
	graph_free(&g);
	return err;
}
