// inject-hook.mjs [--image IMAGE] [--file DLL] [FILE|-]: give the .NET containers of annotated
// workloads the spanprof startup hook, composing with any startup hook they already have.
//
//   kubectl kustomize my-app | node deploy/tools/inject-hook.mjs --image REGISTRY/spanprof-hook:TAG \
//       | kubectl apply -f -
//
// Reads Kubernetes YAML (one or more documents, or a `kind: List`), writes it back with, for every
// Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob or Pod whose pod template (or the
// workload itself) is annotated `spanprof.io/inject-dotnet: "true"`:
//  - an init container `spanprof-hook` (the hook-only image, deploy/hook.Dockerfile) that copies the
//    DLLs into an emptyDir volume `spanprof-hook`, as the restricted Pod Security Standard allows;
//  - in each chosen container: that volume read-only at /spanprof-hook, and /spanprof-hook/<DLL>
//    appended to DOTNET_STARTUP_HOOKS (added when absent), the way the OpenTelemetry Operator
//    composes the variable: an existing `value` keeps its hooks first, ':' then ours; a `valueFrom`
//    cannot be composed and is refused (the Operator refuses it too); a value that already names
//    our DLL is left alone, so a second run changes nothing. DOTNET_ADDITIONAL_DEPS and
//    DOTNET_SHARED_STORE are not touched: the hook has no dependencies, and the Operator appends to
//    them itself.
// The chosen containers: `spanprof.io/container-names` (comma-separated), else the Operator's
// `instrumentation.opentelemetry.io/dotnet-container-names` or `.../container-names`, else the first
// container. A name that is not a container of the pod is an error (nothing is written).
// Exits 1 with the reasons on any error; other objects pass through unchanged.
import fs from 'node:fs';
import YAML from 'yaml';

const ANN_INJECT = 'spanprof.io/inject-dotnet';
const ANN_NAMES = ['spanprof.io/container-names', 'instrumentation.opentelemetry.io/dotnet-container-names',
	'instrumentation.opentelemetry.io/container-names'];
const VOLUME = 'spanprof-hook', MOUNT = '/spanprof-hook', IMAGE_DIR = '/opt/spanprof/hook';
const HOOKS = 'DOTNET_STARTUP_HOOKS';

const usage = () => {
	console.error('usage: inject-hook.mjs [--image IMAGE] [--file SpanProf.Hook.dll] [FILE|-]');
	process.exit(2);
};
let image = 'localhost/spanprof-hook:latest', file = 'SpanProf.Hook.dll', input = '-';
for (let i = 2; i < process.argv.length; i++) {
	const a = process.argv[i];
	if (a === '--image' && i + 1 < process.argv.length) image = process.argv[++i];
	else if (a === '--file' && i + 1 < process.argv.length) file = process.argv[++i];
	else if (a === '-h' || a === '--help') usage();
	else if (a.startsWith('-') && a !== '-') usage();
	else input = a;
}
if (!/^[A-Za-z0-9._-]+\.dll$/.test(file)) {
	console.error(`inject-hook: --file ${file}: a DLL name from the hook image is expected`);
	process.exit(2);
}
const hookPath = `${MOUNT}/${file}`;

// The pod template (or the pod) of a workload, or null for any other object.
const podOf = (o) => {
	switch (o?.kind) {
	case 'Pod': return o;
	case 'Deployment': case 'StatefulSet': case 'DaemonSet': case 'ReplicaSet': case 'Job':
		return o.spec?.template;
	case 'CronJob': return o.spec?.jobTemplate?.spec?.template;
	default: return null;
	}
};

// Append our hook to DOTNET_STARTUP_HOOKS as the Operator does; returns an error or null.
const composeHooks = (c) => {
	c.env ??= [];
	const e = c.env.find((x) => x.name === HOOKS);
	if (!e) {
		c.env.push({ name: HOOKS, value: hookPath });
		return null;
	}
	if (e.valueFrom) return `container ${c.name}: ${HOOKS} comes from valueFrom, which cannot be appended to`;
	const cur = e.value ?? '';
	if (cur.split(':').includes(hookPath)) return null;
	e.value = cur === '' ? hookPath : `${cur}:${hookPath}`;
	return null;
};

const inject = (o, errors) => {
	const pod = podOf(o);
	if (!pod) return;
	const ann = { ...(o.metadata?.annotations ?? {}), ...(pod.metadata?.annotations ?? {}) };
	if (String(ann[ANN_INJECT] ?? '').toLowerCase() !== 'true') return;
	const id = `${o.kind}/${o.metadata?.name}`;
	const spec = pod.spec;
	const containers = spec?.containers ?? [];
	if (!containers.length) return errors.push(`${id}: no containers`);
	const key = ANN_NAMES.find((k) => ann[k]);
	const names = key ? String(ann[key]).split(',').map((s) => s.trim()).filter(Boolean) : [containers[0].name];
	const chosen = [];
	for (const n of names) {
		const c = containers.find((x) => x.name === n);
		if (!c) return errors.push(`${id}: ${key} names container "${n}", the pod has ${containers.map((x) => x.name).join(', ')}`);
		chosen.push(c);
	}
	for (const c of chosen) {
		const err = composeHooks(c);
		if (err) return errors.push(`${id}: ${err}`);
		c.volumeMounts ??= [];
		if (!c.volumeMounts.some((m) => m.name === VOLUME))
			c.volumeMounts.push({ name: VOLUME, mountPath: MOUNT, readOnly: true });
	}
	spec.volumes ??= [];
	if (!spec.volumes.some((v) => v.name === VOLUME))
		spec.volumes.push({ name: VOLUME, emptyDir: { sizeLimit: '16Mi' } });
	spec.initContainers ??= [];
	if (!spec.initContainers.some((c) => c.name === VOLUME))
		spec.initContainers.push({
			name: VOLUME,
			image,
			imagePullPolicy: 'IfNotPresent',
			command: ['cp', '-R', `${IMAGE_DIR}/.`, `${MOUNT}/`],
			resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '100m', memory: '32Mi' } },
			// The copy needs no privilege: fits the `restricted` Pod Security Standard.
			securityContext: {
				runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, allowPrivilegeEscalation: false,
				readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] },
				seccompProfile: { type: 'RuntimeDefault' },
			},
			volumeMounts: [{ name: VOLUME, mountPath: MOUNT }],
		});
};

const src = fs.readFileSync(input === '-' ? 0 : input, 'utf8');
const docs = YAML.parseAllDocuments(src);
const errors = [];
const out = [];
for (const d of docs) {
	if (d.errors.length) {
		console.error(`inject-hook: ${d.errors[0].message}`);
		process.exit(1);
	}
	const o = d.toJS();
	if (!o) continue;
	if (o.kind === 'List' || o.kind === 'ResourceList') for (const it of o.items ?? []) inject(it, errors);
	else inject(o, errors);
	out.push(o);
}
if (errors.length) {
	for (const e of errors) console.error(`inject-hook: ${e}`);
	process.exit(1);
}
process.stdout.write(out.map((o) => YAML.stringify(o, { lineWidth: 0 })).join('---\n'));
