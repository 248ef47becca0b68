// Validates rendered prometheus-operator objects (ServiceMonitor, PrometheusRule, AlertmanagerConfig) against the
// operator's CRD schemas, through @kubernetes-models/prometheus-operator. Usage: node validate_crds.mjs NODE_MODULES MANIFEST.yaml
// Prints one line per object ("ok KIND NAME") and exits 1 on the first invalid one, with the validator's message.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, manifest] = process.argv.slice(2);
const load = async (path) => import(pathToFileURL(join(nodeModules, path)).href);
const yaml = (await load("js-yaml/index.js")).default;
const models = "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
const alpha = "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1alpha1";
const classes = {
  ServiceMonitor: (await load(`${models}/ServiceMonitor.js`)).ServiceMonitor,
  PrometheusRule: (await load(`${models}/PrometheusRule.js`)).PrometheusRule,
  AlertmanagerConfig: (await load(`${alpha}/AlertmanagerConfig.js`)).AlertmanagerConfig,
};

let checked = 0;
for (const doc of yaml.loadAll(readFileSync(manifest, "utf8"))) {
  if (!doc || !(doc.kind in classes)) continue;
  try {
    new classes[doc.kind](doc).validate();
  } catch (error) {
    console.error(`invalid ${doc.kind} ${doc.metadata?.name}: ${error.message}`);
    process.exit(1);
  }
  console.log(`ok ${doc.kind} ${doc.metadata.name}`);
  checked += 1;
}
if (checked === 0) {
  console.error(`no ServiceMonitor, PrometheusRule or AlertmanagerConfig in ${manifest}`);
  process.exit(1);
}
