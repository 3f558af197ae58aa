// validate-manifests.mjs FILE|-: check rendered Kubernetes YAML (kubectl kustomize output) offline,
// without an API server: every object against the Kubernetes OpenAPI schema (kubernetes-models:
// types, formats, required fields), and every field name against the API's known field names (the
// schema allows unknown fields; a misspelt one such as readOnlyRootFileSystem would otherwise
// pass). Custom resources: the PodMonitor of the Prometheus Operator. Exits 1 on any finding.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import YAML from 'yaml';

const src = process.argv[2] && process.argv[2] !== '-' ? fs.readFileSync(process.argv[2], 'utf8')
	: fs.readFileSync(0, 'utf8');
const docs = YAML.parseAllDocuments(src).map((d) => d.toJS()).filter(Boolean);

// Custom resources by API group, from their own model packages (the PodMonitor of
// kubernetes/components/podmonitor).
const CRDS = { 'monitoring.coreos.com': '@kubernetes-models/prometheus-operator' };

// Every property name the API's types declare, from the models' type declarations.
const require = createRequire(import.meta.url);
const known = new Set();
for (const pkg of ['kubernetes-models', '@kubernetes-models/apimachinery', ...Object.values(CRDS)]) {
	const root = path.dirname(require.resolve(`${pkg}/package.json`));
	const walk = (dir) => {
		for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
			const p = path.join(dir, e.name);
			if (e.isDirectory()) walk(p);
			else if (e.name.endsWith('.d.ts'))
				for (const m of fs.readFileSync(p, 'utf8').matchAll(/^\s+"([^"]+)"\??:/gm)) known.add(m[1]);
		}
	};
	walk(root);
}
// Maps whose keys are the user's (labels, data, resource names ...), not field names.
const freeform = new Set(['labels', 'annotations', 'data', 'stringData', 'binaryData', 'matchLabels',
	'nodeSelector', 'limits', 'requests', 'capacity', 'hard', 'parameters']);
const unknownFields = (v, at, out) => {
	if (Array.isArray(v)) v.forEach((x, i) => unknownFields(x, `${at}/${i}`, out));
	else if (v && typeof v === 'object')
		for (const [k, x] of Object.entries(v)) {
			if (!known.has(k)) out.push(`${at}/${k}`);
			if (!freeform.has(k)) unknownFields(x, `${at}/${k}`, out);
		}
	return out;
};

let bad = 0;
for (const o of docs) {
	const id = `${o.kind}/${o.metadata?.name}`;
	const [group, version] = o.apiVersion.includes('/') ? o.apiVersion.split('/') : ['', o.apiVersion];
	let mod;
	try {
		mod = await import(CRDS[group] ? `${CRDS[group]}/${group}/${version}/${o.kind}`
			: `kubernetes-models/${group ? group + '/' : ''}${version}/${o.kind}`);
	} catch {
		console.log(`INVALID ${id}: unknown apiVersion/kind ${o.apiVersion} ${o.kind}`);
		bad++;
		continue;
	}
	const problems = [];
	try {
		new mod[o.kind](o).validate();
	} catch (e) {
		problems.push(e.message);
	}
	for (const f of unknownFields(o, '', [])) problems.push(`unknown field ${f}`);
	if (problems.length) {
		bad++;
		console.log(`INVALID ${id}: ${problems.join('; ')}`);
	} else console.log(`ok ${id}`);
}
if (!docs.length) {
	console.log('INVALID: no objects');
	bad++;
}
process.exit(bad ? 1 : 0);
