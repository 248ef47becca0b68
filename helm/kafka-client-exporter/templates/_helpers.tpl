{{- define "kce.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kce.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "kce.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "kce.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "kce.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kce.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kce.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kce.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "kce.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kce.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Name of a resource derived from a file name: the release's full name plus the file's stem (without a
leading "<chart name>-", which the full name already says), DNS-1123 safe. */}}
{{- define "kce.fileResourceName" -}}
{{- $stem := .stem | trimPrefix (printf "%s-" .root.Chart.Name) }}
{{- printf "%s-%s" (include "kce.fullname" .root) $stem | lower | replace "_" "-" | replace "." "-" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "true" when /metrics is served over TLS. */}}
{{- define "kce.tls" -}}
{{- if and .Values.webConfig.enabled .Values.webConfig.tls.enabled }}true{{ end }}
{{- end }}

{{/* "true" when the server requires a client certificate: kubelet HTTP probes cannot connect then. */}}
{{- define "kce.clientCertRequired" -}}
{{- if and (include "kce.tls" .) (eq .Values.webConfig.tls.clientAuthType "RequireAndVerifyClientCert") }}true{{ end }}
{{- end }}

{{- define "kce.configDir" -}}/etc/kafka-client-exporter{{- end }}

{{/* The exporter-toolkit web config file rendered from .Values.webConfig. */}}
{{- define "kce.webConfig" -}}
{{- $web := .Values.webConfig }}
{{- $dir := include "kce.configDir" . }}
{{- $doc := dict }}
{{- if $web.tls.enabled }}
{{- $tls := dict "cert_file" (printf "%s/tls/tls.crt" $dir) "key_file" (printf "%s/tls/tls.key" $dir) "client_auth_type" $web.tls.clientAuthType "min_version" $web.tls.minVersion "max_version" $web.tls.maxVersion }}
{{- if ne $web.tls.clientAuthType "NoClientCert" }}
{{- $_ := set $tls "client_ca_file" (printf "%s/client-ca/%s" $dir $web.tls.clientCA.key) }}
{{- end }}
{{- with $web.tls.clientAllowedSans }}
{{- $_ := set $tls "client_allowed_sans" . }}
{{- end }}
{{- with $web.tls.cipherSuites }}
{{- $_ := set $tls "cipher_suites" . }}
{{- end }}
{{- $_ := set $doc "tls_server_config" $tls }}
{{- end }}
{{- with $web.basicAuthUsers }}
{{- $_ := set $doc "basic_auth_users" . }}
{{- end }}
{{- with $web.headers }}
{{- $_ := set $doc "http_server_config" (dict "headers" .) }}
{{- end }}
{{- toYaml $doc }}
{{- end }}

{{/* An image of the chart, (dict "root" $ "image" <image values>): [registry/]repository:tag; registry from
the image's values, else global.imageRegistry; tag from its values, else the chart's appVersion. */}}
{{- define "kce.imageRef" -}}
{{- $registry := .image.registry | default ((.root.Values.global).imageRegistry) }}
{{- $tag := .image.tag | default .root.Chart.AppVersion }}
{{- if $registry }}{{ printf "%s/%s:%s" (trimSuffix "/" $registry) .image.repository $tag }}
{{- else }}{{ printf "%s:%s" .image.repository $tag }}
{{- end }}
{{- end }}

{{- define "kce.image" -}}
{{- include "kce.imageRef" (dict "root" . "image" .Values.image) }}
{{- end }}

{{/* imagePullSecrets of the pods: the chart's, then a parent chart's global ones (names or {name} objects). */}}
{{- define "kce.imagePullSecrets" -}}
{{- $secrets := list }}
{{- range concat .Values.imagePullSecrets (((.Values.global).imagePullSecrets) | default list) }}
{{- $entry := kindIs "string" . | ternary (dict "name" .) . }}
{{- if not (has $entry $secrets) }}{{ $secrets = append $secrets $entry }}{{ end }}
{{- end }}
{{- with $secrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Labels of the helm test pod: the release's, but not the Service's selector (it must not receive traffic). */}}
{{- define "kce.testLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: helm-test
app.kubernetes.io/part-of: {{ include "kce.name" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The job label Prometheus Operator gives the ServiceMonitor's targets: the Service's name, or the value of
the Service label that serviceMonitor.jobLabel names. */}}
{{- define "kce.scrapeJob" -}}
{{- $jobLabel := .Values.serviceMonitor.jobLabel }}
{{- if $jobLabel }}
{{- $serviceLabels := merge (dict) .Values.service.labels (include "kce.labels" . | fromYaml) }}
{{- if not (hasKey $serviceLabels $jobLabel) }}
{{- fail (printf "serviceMonitor.jobLabel %q is not a label of the Service; its labels: %s (add one with service.labels)" $jobLabel (keys $serviceLabels | sortAlpha | join ", ")) }}
{{- end }}
{{- get $serviceLabels $jobLabel }}
{{- else }}
{{- include "kce.fullname" . }}
{{- end }}
{{- end }}

{{/* The matchers that scope every alert expression: prometheusRule.jobSelector, else the scrape job. */}}
{{- define "kce.jobSelector" -}}
{{- .Values.prometheusRule.jobSelector | default (printf "job=%q" (include "kce.scrapeJob" .)) }}
{{- end }}

{{/* The rules files' own job matcher and runbook location, which the chart replaces. */}}
{{- define "kce.sourceJobSelector" -}}job="kafka-client-exporter"{{- end }}
{{- define "kce.sourceRunbookBaseUrl" -}}https://github.com/kafka-client-exporter/kafka-client-exporter/blob/main/alerts/runbook.md{{- end }}

{{/* Where the exporter serves its metrics (config.web.telemetry_path; --web.telemetry-path in extraArgs is not seen). */}}
{{- define "kce.telemetryPath" -}}
{{- ((.Values.config).web).telemetry_path | default "/metrics" }}
{{- end }}

{{/* Where the inventory jobs write and the exporter reads: one directory per cluster on the inventory claim. */}}
{{- define "kce.inventoryDir" -}}/var/lib/kafka-client-exporter/inventory{{- end }}

{{- define "kce.inventoryClaim" -}}
{{- .Values.inventory.persistence.existingClaim | default (printf "%s-inventory" (include "kce.fullname" .)) }}
{{- end }}

{{/* "true" when the inventory claim can be mounted on one node only: the job must run where the exporter runs. */}}
{{- define "kce.inventoryNodeBound" -}}
{{- if and .Values.inventory.enabled (not (has "ReadWriteMany" .Values.inventory.persistence.accessModes)) }}true{{ end }}
{{- end }}

{{/* Labels of the inventory job's pods: the release's, but not the Service's selector (no traffic, no PDB). */}}
{{- define "kce.inventoryLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: inventory
app.kubernetes.io/part-of: {{ include "kce.name" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The CronJob of an inventory job, (dict "root" $ "cluster" <name>): at most 52 characters (the Job controller
appends 11), DNS-1123. */}}
{{- define "kce.inventoryJobName" -}}
{{- printf "%s-inventory-%s" (include "kce.fullname" .root | trunc 30 | trimSuffix "-") .cluster | lower | replace "_" "-" | replace "." "-" | trunc 52 | trimSuffix "-" }}
{{- end }}

{{/* Fails the render unless every inventory job names a cluster of config.clusters and has a CronJob name of its
own; renders nothing. */}}
{{- define "kce.inventoryCheck" -}}
{{- if not .Values.inventory.jobs }}
{{- fail "inventory.enabled needs inventory.jobs: one {cluster: <a name of config.clusters>, input: {...}} per Kafka cluster" }}
{{- end }}
{{- $names := list }}
{{- range .Values.config.clusters }}{{ $names = append $names .name }}{{ end }}
{{- $seen := dict }}
{{- range $index, $job := .Values.inventory.jobs }}
{{- if not (has $job.cluster $names) }}
{{- fail (printf "inventory.jobs[%d].cluster %q is not the name of a cluster in config.clusters (%s)" $index $job.cluster (empty $names | ternary "which is empty" (printf "names: %s" ($names | join ", ")))) }}
{{- end }}
{{- $name := include "kce.inventoryJobName" (dict "root" $ "cluster" $job.cluster) }}
{{- with get $seen $name }}
{{- if eq . $job.cluster }}
{{- fail (printf "inventory.jobs: cluster %q has two jobs; give it one (--input takes more paths in extraArgs)" .) }}
{{- end }}
{{- fail (printf "inventory.jobs: clusters %q and %q would both be CronJob %s; rename one" . $job.cluster $name) }}
{{- end }}
{{- $_ := set $seen $name $job.cluster }}
{{- end }}
{{- end }}

{{/* config.yaml: .Values.config, with inventory.path set in each cluster an inventory job writes for (unless that
cluster names a path of its own). */}}
{{- define "kce.config" -}}
{{- $config := deepCopy .Values.config }}
{{- if .Values.inventory.enabled }}
{{- include "kce.inventoryCheck" . }}
{{- $clusters := list }}
{{- range $config.clusters }}
{{- $cluster := . }}
{{- range $.Values.inventory.jobs }}
{{- if eq .cluster $cluster.name }}
{{- $inventory := $cluster.inventory | default dict }}
{{- if not $inventory.path }}
{{- $_ := set $inventory "path" (printf "%s/%s" (include "kce.inventoryDir" $) .cluster) }}
{{- end }}
{{- $_ := set $cluster "inventory" $inventory }}
{{- end }}
{{- end }}
{{- $clusters = append $clusters $cluster }}
{{- end }}
{{- $_ := set $config "clusters" $clusters }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/* Alertmanager matchers as the configuration file writes them (name="value", name=~"regex", ...) as an
AlertmanagerConfig's list of {name, matchType, value}. */}}
{{- define "kce.amMatchers" -}}
{{- range . }}
{{- $pattern := "^\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)\\s*\"(.*)\"\\s*$" }}
{{- if not (regexMatch $pattern .) }}
{{- fail (printf "alerts/alertmanager.example.yaml: cannot read the matcher %s" .) }}
{{- end }}
- name: {{ regexReplaceAll $pattern . "${1}" }}
  matchType: {{ regexReplaceAll $pattern . "${2}" | quote }}
  value: {{ regexReplaceAll $pattern . "${3}" | replace "\\\"" "\"" | quote }}
{{- end }}
{{- end }}
