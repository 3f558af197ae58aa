#!/usr/bin/env node
// podspec.js: what the kubelet would run for the agent container of a rendered DaemonSet, so that
// image.sh runs the manifest itself and nothing written by hand.
//
//   podspec.js RENDERED.yaml --part argv|env|caps|mounts [--entrypoint JSON] [--node NAME]
//
// RENDERED.yaml: `kubectl kustomize` output (the DaemonSet and its generated ConfigMap).
//   argv  the container's command (else --entrypoint, the image's ENTRYPOINT as JSON) and args,
//         with $(VAR) expanded from the container's env the way Kubernetes does ($$ escapes; an
//         undefined variable is left as written), one per line
//   env   NAME=VALUE, one per line, in the order of `env`: `value`, configMapKeyRef (from the
//         rendered ConfigMap of that name; an absent optional key: no variable), fieldRef
//         spec.nodeName (--node, default it-node); an optional secretKeyRef has no Secret here:
//         no variable. Anything else is an error.
//   caps  securityContext.capabilities.add, one per line, as written (no CAP_ prefix)
//   mounts  one line per volumeMount: MOUNTPATH<TAB>ro|rw<TAB>emptyDir|hostPath<TAB>the host path
//         (hostPath) or the volume's name (emptyDir); other volume kinds are an error
// The agent container is the DaemonSet's container named spanprof (else its first).
'use strict';
const fs = require('fs');
const path = require('path');

const YAML = require(path.join(__dirname, '../../deploy/tools/node_modules/yaml'));

const args = process.argv.slice(2);
let file = null, part = null, entrypoint = [], node = 'it-node';
for (let i = 0; i < args.length; i++) {
	if (args[i] === '--part') part = args[++i];
	else if (args[i] === '--entrypoint') entrypoint = JSON.parse(args[++i]);
	else if (args[i] === '--node') node = args[++i];
	else if (!file) file = args[i];
	else usage();
}
function usage() {
	console.error('usage: podspec.js RENDERED.yaml --part argv|env|caps|mounts [--entrypoint JSON] [--node NAME]');
	process.exit(2);
}
function die(msg) {
	console.error(`podspec.js: ${msg}`);
	process.exit(1);
}
if (!file || !['argv', 'env', 'caps', 'mounts'].includes(part)) usage();

const docs = YAML.parseAllDocuments(fs.readFileSync(file, 'utf8')).map((d) => d.toJS()).filter(Boolean);
const ds = docs.find((o) => o.kind === 'DaemonSet');
if (!ds) die(`${file}: no DaemonSet`);
const cs = ds.spec.template.spec.containers;
const c = cs.find((x) => x.name === 'spanprof') ?? cs[0];
const configMaps = new Map(docs.filter((o) => o.kind === 'ConfigMap').map((o) => [o.metadata.name, o.data ?? {}]));

const env = [];
for (const e of c.env ?? []) {
	const vf = e.valueFrom;
	if (!vf) {
		env.push([e.name, expand(e.value ?? '', env)]);
	} else if (vf.configMapKeyRef) {
		const r = vf.configMapKeyRef, data = configMaps.get(r.name);
		if (data && r.key in data) env.push([e.name, data[r.key]]);
		else if (!r.optional) die(`env ${e.name}: ConfigMap ${r.name} key ${r.key} is not in the rendered output`);
	} else if (vf.fieldRef) {
		if (vf.fieldRef.fieldPath !== 'spec.nodeName') die(`env ${e.name}: fieldRef ${vf.fieldRef.fieldPath} not known here`);
		env.push([e.name, node]);
	} else if (vf.secretKeyRef) {
		if (!vf.secretKeyRef.optional) die(`env ${e.name}: a required Secret (${vf.secretKeyRef.name})`);
	} else {
		die(`env ${e.name}: ${Object.keys(vf).join(',')} not known here`);
	}
}

// Kubernetes' expansion (k8s.io/kubernetes third_party/forked/golang/expansion): $(NAME) from the
// variables defined so far, $$ is a literal $, anything else as written.
function expand(s, vars) {
	const m = new Map(vars);
	return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (all, name) =>
		all === '$$' ? '$' : (m.has(name) ? m.get(name) : all));
}

let out;
if (part === 'argv') {
	const argv = [...(c.command ?? entrypoint), ...(c.args ?? [])].map((a) => expand(String(a), env));
	if (!argv.length) die('no command: pass the image entrypoint with --entrypoint');
	out = argv;
} else if (part === 'env') {
	out = env.map(([k, v]) => `${k}=${v}`);
} else if (part === 'mounts') {
	const vols = new Map((ds.spec.template.spec.volumes ?? []).map((v) => [v.name, v]));
	out = (c.volumeMounts ?? []).map((m) => {
		const v = vols.get(m.name);
		if (!v) die(`volumeMount ${m.name}: no such volume`);
		const how = m.readOnly ? 'ro' : 'rw';
		if (v.hostPath) return `${m.mountPath}\t${how}\thostPath\t${v.hostPath.path}`;
		if (v.emptyDir) return `${m.mountPath}\t${how}\temptyDir\t${v.name}`;
		die(`volume ${v.name}: ${Object.keys(v).filter((k) => k !== 'name').join(',')} not known here`);
	});
} else {
	out = c.securityContext?.capabilities?.add ?? [];
	if ((c.securityContext?.capabilities?.drop ?? []).join() !== 'ALL') die('capabilities.drop is not [ALL]');
}
for (const l of out) {
	if (l.includes('\n')) die(`a newline in ${JSON.stringify(l)}`);
	console.log(l);
}
