/* test_flamegraph.c: SVG flame graph: well-formed XML, frame widths, prefix merging, escaping, size, and the embedded script. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "profile.h"
#include "testutil.h"

struct fixture {
	struct profile *p;
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct profile_opts o = { .period_ns = 1000000 };

	if (!fx)
		return -1;
	fx->p = profile__new(&o);
	if (!fx->p || !testutil__mkdtemp(fx->dir, sizeof(fx->dir)))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/flame.svg", fx->dir);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	profile__free(fx->p);
	testutil__rm_rf(fx->dir);
	free(fx);
	return 0;
}

static uint32_t loc(struct profile *p, const char *name, uint64_t addr)
{
	uint32_t f = profile__function(p, name, NULL, NULL);

	assert_int_not_equal(f, 0);
	return profile__location(p, 0, addr, f);
}

/* Adds a stack given root first as "a;b;c" (test convenience; the API takes leaf first). */
static void add(struct profile *p, const char *folded, uint64_t count, const struct pf_label *l,
		size_t nl)
{
	uint32_t locs[300];
	char buf[4096], *tok, *save = NULL;
	size_t n = 0, i;

	snprintf(buf, sizeof(buf), "%s", folded);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		locs[n++] = loc(p, tok, 0x1000 + (uint64_t)(tok[0]) * 64);
	for (i = 0; i < n / 2; i++) {
		uint32_t t = locs[i];

		locs[i] = locs[n - 1 - i];
		locs[n - 1 - i] = t;
	}
	assert_int_equal(profile__add(p, locs, n, l, nl, count), 0);
}

static char *render(struct profile *p, const char *title, const char *root_key)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(flamegraph__write(p, f, title, root_key), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* ---- a tiny XML 1.0 well-formedness check ---------------------------------------------------- */

static int utf8_ok(const unsigned char *s)
{
	while (*s) {
		int n = *s < 0x80 ? 1 : (*s & 0xe0) == 0xc0 ? 2 : (*s & 0xf0) == 0xe0 ? 3 :
			(*s & 0xf8) == 0xf0 ? 4 : 0;
		int i;

		if (!n || (*s >= 0x80 && *s < 0xc2) || *s > 0xf4)
			return 0;
		for (i = 1; i < n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return 0;
		}
		s += n;
	}
	return 1;
}

static int entity_ok(const char *s)
{
	static const char *const named[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;" };
	size_t i;

	for (i = 0; i < 5; i++) {
		if (strncmp(s, named[i], strlen(named[i])) == 0)
			return (int)strlen(named[i]);
	}
	if (s[1] == '#') {
		const char *e = s + 2;
		int hex = *e == 'x';

		e += hex;
		while (hex ? strchr("0123456789abcdefABCDEF", *e) && *e : (*e >= '0' && *e <= '9'))
			e++;
		if (*e == ';' && e > s + 2 + hex)
			return (int)(e - s + 1);
	}
	return 0;
}

static int name_len(const char *s)
{
	int n = 0;

	while (s[n] && (s[n] == '_' || s[n] == ':' || s[n] == '-' || s[n] == '.' ||
			(s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
			(n && s[n] >= '0' && s[n] <= '9')))
		n++;
	return n;
}

/* Returns NULL if doc is well-formed, else what is wrong. */
static const char *xml_check(const char *doc)
{
	const char *open[1024], *s = doc, *e;
	int lens[1024], depth = 0, roots = 0, n;

	if (!utf8_ok((const unsigned char *)doc))
		return "invalid UTF-8";
	while (*s) {
		if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r')
			return "control character";
		if (strncmp(s, "<?", 2) == 0) {
			if (!(e = strstr(s, "?>")))
				return "unterminated <?";
			s = e + 2;
		} else if (strncmp(s, "<!--", 4) == 0) {
			if (!(e = strstr(s + 4, "-->")))
				return "unterminated comment";
			s = e + 3;
		} else if (strncmp(s, "<![CDATA[", 9) == 0) {
			if (!depth)
				return "CDATA outside the root";
			if (!(e = strstr(s, "]]>")))
				return "unterminated CDATA";
			s = e + 3;
		} else if (strncmp(s, "</", 2) == 0) {
			n = name_len(s + 2);
			if (!depth || n != lens[depth - 1] || strncmp(s + 2, open[depth - 1], n) != 0)
				return "mismatched end tag";
			s += 2 + n;
			while (*s == ' ' || *s == '\n')
				s++;
			if (*s++ != '>')
				return "bad end tag";
			depth--;
		} else if (*s == '<') {
			const char *tag = ++s;

			n = name_len(tag);
			if (!n)
				return "bad tag name";
			s += n;
			for (;;) {
				int an;
				char q;

				while (*s == ' ' || *s == '\n' || *s == '\t')
					s++;
				if (*s == '>' || strncmp(s, "/>", 2) == 0)
					break;
				an = name_len(s);
				if (!an || s[an] != '=' || (s[an + 1] != '"' && s[an + 1] != '\''))
					return "bad attribute";
				q = s[an + 1];
				for (s += an + 2; *s != q; s++) {
					if (!*s || *s == '<')
						return "bad attribute value";
					if (*s == '&' && !entity_ok(s))
						return "bad entity in attribute";
				}
				s++;
			}
			if (*s == '>') {
				if (depth == 1024)
					return "too deep";
				if (!depth && roots++)
					return "two root elements";
				open[depth] = tag;
				lens[depth++] = n;
				s++;
			} else {
				if (!depth && roots++)
					return "two root elements";
				s += 2;
			}
		} else if (*s == '&') {
			if (!(n = entity_ok(s)))
				return "bad entity";
			s += n;
		} else {
			if (strncmp(s, "]]>", 3) == 0)
				return "]]> in text";
			if (!depth && *s != ' ' && *s != '\n' && *s != '\r' && *s != '\t')
				return "text outside the root";
			s++;
		}
	}
	if (depth)
		return "unclosed element";
	return roots == 1 ? NULL : "no root element";
}

static void assert_well_formed(const char *doc)
{
	const char *why = xml_check(doc);

	if (why)
		fail_msg("not well-formed XML: %s", why);
}

/* ---- reading frames back --------------------------------------------------------------------- */

struct frame {
	unsigned long long s, n;
	unsigned d;
	char title[512];	/* as escaped in the file */
	double x, w;
	char fill[32];
};

static size_t frames_of(const char *doc, struct frame *out, size_t max)
{
	const char *s = doc;
	size_t n = 0;

	while ((s = strstr(s, "<g data-s=")) && n < max) {
		struct frame *f = &out[n];
		const char *t = strstr(s, "<title>"), *te;
		int got = sscanf(s, "<g data-s=\"%llu\" data-n=\"%llu\" data-d=\"%u\">", &f->s, &f->n, &f->d);

		assert_int_equal(got, 3);
		assert_non_null(t);
		te = strstr(t, "</title>");
		assert_non_null(te);
		snprintf(f->title, sizeof(f->title), "%.*s", (int)(te - t - 7), t + 7);
		got = sscanf(strstr(te, "<rect"), "<rect x=\"%lf\" y=\"%*d\" width=\"%lf\" height=\"%*d\" rx=\"2\" fill=\"%31[^\"]\"",
			     &f->x, &f->w, f->fill);
		assert_int_equal(got, 3);
		n++;
		s = te;
	}
	return n;
}

/* The frame whose title starts with name followed by " (". */
static const struct frame *find(const struct frame *fr, size_t n, const char *name, unsigned depth)
{
	size_t i, len = strlen(name);

	for (i = 0; i < n; i++) {
		if (fr[i].d == depth && strncmp(fr[i].title, name, len) == 0 &&
		    strncmp(fr[i].title + len, " (", 2) == 0)
			return &fr[i];
	}
	fail_msg("no frame \"%s\" at depth %u", name, depth);
	return NULL;
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_flamegraph_well_formed(void **state)
{
	struct fixture *fx = *state;
	char *doc;
	int rc;

	add(fx->p, "main;a;b", 3, NULL, 0);
	add(fx->p, "main;c", 1, NULL, 0);
	doc = render(fx->p, "t", NULL);
	assert_well_formed(doc);
	assert_non_null(strstr(doc, "<svg "));
	assert_non_null(strstr(doc, "xmlns=\"http://www.w3.org/2000/svg\""));
	/* self-contained: nothing loaded from elsewhere */
	assert_null(strstr(doc, "href="));
	assert_null(strstr(doc, "http://www.w3.org/1999/xlink"));
	assert_null(strstr(doc, "@import"));
	/* the checker itself rejects broken documents */
	assert_non_null(xml_check("<a><b></a></b>"));
	assert_non_null(xml_check("<a>x & y</a>"));
	assert_non_null(xml_check("<a t=\"<\"/>"));
	assert_non_null(xml_check("<a>\xff</a>"));
	assert_null(xml_check("<?xml version=\"1.0\"?>\n<a x='1'><b/>&lt;<![CDATA[<&]]></a>\n"));

	/* a real parser, when there is one */
	if (access("/usr/bin/python3", X_OK) == 0) {
		testutil__write_file(NULL, fx->path, doc);
		rc = testutil__run("python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' '%s'",
				   fx->path);
		assert_int_equal(rc, 0);
	} else {
		printf("python3 missing: only the built-in XML check ran\n");
	}
	free(doc);
}

static void test_flamegraph_widths_proportional(void **state)
{
	struct fixture *fx = *state;
	struct frame fr[16];
	const struct frame *all, *m, *a, *b;
	char *doc;
	size_t n;

	add(fx->p, "main;a", 75, NULL, 0);
	add(fx->p, "main;b", 25, NULL, 0);
	doc = render(fx->p, "widths", NULL);
	n = frames_of(doc, fr, 16);
	assert_int_equal(n, 4);
	all = find(fr, n, "all", 0);
	m = find(fr, n, "main", 1);
	a = find(fr, n, "a", 2);
	b = find(fr, n, "b", 2);
	assert_int_equal(all->n, 100);
	assert_float_equal(all->x, 10.0, 0.001);
	assert_float_equal(all->w, 1180.0, 0.001);
	assert_float_equal(m->w, 1180.0, 0.001);
	assert_float_equal(a->w, 885.0, 0.001);	/* 75% of 1180 */
	assert_float_equal(b->w, 295.0, 0.001);
	assert_float_equal(a->x, 10.0, 0.001);	/* children in name order, side by side */
	assert_float_equal(b->x, 895.0, 0.001);
	assert_int_equal(b->s, 75);
	assert_non_null(strstr(a->title, "(75 samples, 75.00%)"));
	free(doc);
}

static void test_flamegraph_merges_prefixes(void **state)
{
	struct fixture *fx = *state;
	struct frame fr[16];
	char *doc;
	size_t n;

	add(fx->p, "main;x;y", 2, NULL, 0);
	add(fx->p, "main;x;z", 3, NULL, 0);
	add(fx->p, "main;w", 4, NULL, 0);
	add(fx->p, "main;x;y", 1, (struct pf_label[]){ { "span_id", "1", 0 } }, 1);	/* own sample */
	doc = render(fx->p, NULL, NULL);
	n = frames_of(doc, fr, 16);
	assert_int_equal(n, 6);	/* all, main, x, y, z, w */
	assert_int_equal(find(fr, n, "main", 1)->n, 10);
	assert_int_equal(find(fr, n, "x", 2)->n, 6);
	assert_int_equal(find(fr, n, "y", 3)->n, 3);
	assert_int_equal(find(fr, n, "z", 3)->n, 3);
	assert_int_equal(find(fr, n, "w", 2)->n, 4);
	/* y and z sit inside x */
	assert_true(find(fr, n, "y", 3)->s >= find(fr, n, "x", 2)->s);
	assert_true(find(fr, n, "z", 3)->s + 3 <= find(fr, n, "x", 2)->s + 6);
	free(doc);
}

static void test_flamegraph_escapes_names(void **state)
{
	struct fixture *fx = *state;
	struct frame fr[16];
	char *doc;
	size_t n;

	add(fx->p, "main;operator<<(A&, \"b\", 'c')", 5, NULL, 0);
	add(fx->p, "main;bad\xff" "byte\x01" "ctl;caf\xc3\xa9", 5, NULL, 0);
	doc = render(fx->p, "<script>alert(1)</script> & co", NULL);
	assert_well_formed(doc);
	n = frames_of(doc, fr, 16);
	find(fr, n, "operator&lt;&lt;(A&amp;, &quot;b&quot;, &apos;c&apos;)", 2);
	find(fr, n, "bad?byte?ctl", 2);
	find(fr, n, "caf\xc3\xa9", 3);	/* valid UTF-8 kept as is */
	assert_null(strstr(doc, "operator<<"));
	assert_null(strstr(doc, "<script>alert"));
	assert_non_null(strstr(doc, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"));
	free(doc);
}

static void test_flamegraph_root_label(void **state)
{
	struct fixture *fx = *state;
	struct pf_label x[] = { { "span_name", "GET /x", 0 }, { "span_id", "1", 0 } };
	struct pf_label y[] = { { "span_name", "GET /x", 0 }, { "span_id", "2", 0 } };
	struct frame fr[16];
	char *doc;
	size_t n;

	add(fx->p, "main;a", 2, x, 2);
	add(fx->p, "main;a", 3, y, 2);
	add(fx->p, "main;b", 7, NULL, 0);
	add(fx->p, "GET /x;c", 1, NULL, 0);	/* a root function named like a label value */
	doc = render(fx->p, NULL, "span_name");
	n = frames_of(doc, fr, 16);
	assert_int_equal(n, 7);	/* all; GET /x, main, a, c; main, b */
	assert_int_equal(find(fr, n, "GET /x", 1)->n, 6);	/* merged, as folded output would be */
	assert_int_equal(find(fr, n, "c", 2)->n, 1);
	assert_int_equal(find(fr, n, "main", 2)->n, 5);
	assert_int_equal(find(fr, n, "a", 3)->n, 5);
	assert_int_equal(find(fr, n, "main", 1)->n, 7);
	assert_int_equal(find(fr, n, "b", 2)->n, 7);
	free(doc);
}

static void test_flamegraph_stable_colours(void **state)
{
	struct fixture *fx = *state;
	struct frame fr[32];
	char *doc, *doc2;
	size_t n, i, distinct = 0;

	add(fx->p, "main;hash;Alpha", 1, NULL, 0);
	add(fx->p, "main;other;Alpha", 1, NULL, 0);
	add(fx->p, "main;Beta;Gamma;Delta;Epsilon", 1, NULL, 0);
	doc = render(fx->p, NULL, NULL);
	n = frames_of(doc, fr, 32);
	for (i = 0; i < n; i++) {	/* both Alpha frames share a colour */
		if (strncmp(fr[i].title, "Alpha (", 7) == 0) {
			assert_string_equal(fr[i].fill, find(fr, n, "Alpha", 3)->fill);
			distinct++;
		}
	}
	assert_int_equal(distinct, 2);
	distinct = 0;
	for (i = 1; i < n; i++)
		distinct += strcmp(fr[i].fill, fr[1].fill) != 0;
	assert_true(distinct >= 3);	/* names do not all get one colour */
	doc2 = render(fx->p, NULL, NULL);
	assert_string_equal(doc, doc2);	/* same profile, same bytes */
	free(doc);
	free(doc2);
}

static void test_flamegraph_deep_stack(void **state)
{
	struct fixture *fx = *state;
	struct frame *fr = calloc(300, sizeof(*fr));
	uint32_t locs[256];
	char name[16], *doc;
	int i, height;
	size_t n;

	assert_non_null(fr);
	for (i = 0; i < 256; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		locs[255 - i] = loc(fx->p, name, (uint64_t)i + 1);
	}
	assert_int_equal(profile__add(fx->p, locs, 256, NULL, 0, 3), 0);
	assert_int_equal(profile__add(fx->p, locs + 128, 128, NULL, 0, 1), 0);
	doc = render(fx->p, NULL, NULL);
	assert_well_formed(doc);
	n = frames_of(doc, fr, 300);
	assert_int_equal(n, 257);
	assert_int_equal(find(fr, n, "f255", 256)->n, 3);
	assert_int_equal(find(fr, n, "f127", 128)->n, 4);
	assert_int_equal(sscanf(strstr(doc, "height=\""), "height=\"%d\"", &height), 1);
	assert_int_equal(height, 64 + 257 * 16 + 32);
	free(doc);
	free(fr);
}

static void test_flamegraph_many_samples(void **state)
{
	struct fixture *fx = *state;
	enum { FUNCS = 3000, OPS = 200000, DEPTH = 24 };
	uint32_t locs[DEPTH], seed = 99, i, j;
	char name[64], *doc;
	struct timespec t0, t1;
	size_t len;
	double ms;

	for (i = 0; i < FUNCS; i++) {
		snprintf(name, sizeof(name), "void [App] App.C%u::M%u()", i % 97, i);
		loc(fx->p, name, 0x1000 + i);
	}
	for (i = 0; i < OPS; i++) {
		for (j = 0; j < DEPTH; j++) {
			seed = seed * 1103515245 + 12345;
			/* skewed: a few hot frames near the root, a long tail at the leaves */
			locs[DEPTH - 1 - j] = 1 + (seed >> 8) % (j < 4 ? 3 : FUNCS);
		}
		assert_int_equal(profile__add(fx->p, locs, DEPTH, NULL, 0, 1), 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	doc = render(fx->p, "many", NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	len = strlen(doc);
	printf("flamegraph: %u samples, %zu distinct, %.0f ms, %zu bytes\n", OPS,
	       profile__sample_count(fx->p), ms, len);
	assert_well_formed(doc);
	assert_non_null(strstr(doc, "narrow ones hidden"));
	assert_true(len < 32u << 20);	/* frames under 0.1 px are left out */
	free(doc);
}

static void test_flamegraph_interactive_script(void **state)
{
	struct fixture *fx = *state;
	char tool[PATH_MAX];
	FILE *f;
	int rc;

	add(fx->p, "main;Run;Parse;strlen", 4, NULL, 0);
	add(fx->p, "main;Run;Parse", 2, NULL, 0);
	add(fx->p, "main;Run;Write", 3, NULL, 0);
	add(fx->p, "main;Idle", 5, NULL, 0);
	add(fx->p, "main;Run;Parse;Run", 1, NULL, 0);	/* nested match: counted once */
	f = fopen(fx->path, "w");
	assert_non_null(f);
	assert_int_equal(flamegraph__write(fx->p, f, "interactive", NULL), 0);
	assert_int_equal(fclose(f), 0);
	if (testutil__src_path(tool, sizeof(tool), "tests/tools/flamegraph-check.js") ||
	    access(tool, R_OK) != 0)
		fail_msg("tests/tools/flamegraph-check.js not found (set SPANPROF_SRCDIR)");
	rc = testutil__run("node '%s' '%s' Run", tool, fx->path);
	assert_true(WIFEXITED(rc));
	assert_int_equal(WEXITSTATUS(rc), 0);
}

static void test_flamegraph_empty_and_errors(void **state)
{
	struct fixture *fx = *state;
	char *doc = render(fx->p, NULL, NULL);
	FILE *f;

	assert_well_formed(doc);
	assert_non_null(strstr(doc, "0 samples"));
	free(doc);
	assert_int_equal(flamegraph__write(NULL, stdout, NULL, NULL), -EINVAL);
	assert_int_equal(flamegraph__write(fx->p, NULL, NULL, NULL), -EINVAL);
	add(fx->p, "main", 1, NULL, 0);
	f = fopen("/dev/full", "w");
	if (!f)
		skip();
	assert_int_equal(flamegraph__write(fx->p, f, NULL, NULL), -ENOSPC);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_flamegraph_well_formed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flamegraph_widths_proportional, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flamegraph_merges_prefixes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flamegraph_escapes_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flamegraph_root_label, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flamegraph_stable_colours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flamegraph_deep_stack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flamegraph_many_samples, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flamegraph_interactive_script, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flamegraph_empty_and_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
