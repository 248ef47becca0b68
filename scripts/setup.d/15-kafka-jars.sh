# Kafka's jars from Maven Central, one closure per module of scripts/maven/pom.xml, into the git-ignored .tools/:
# - .tools/kafka-clients: kafka-clients 4.3.0 and 3.9.0, slf4j-api, Jackson (harness/kafka_jars.py: the broker
#   double's JMX host, the Java clients, the ApiVersions and request-log oracles);
# - .tools/kafka/<release>/libs: real brokers and their admin tools: 2.8.2, 3.3.2 and 3.7.2 (ZooKeeper mode, with
#   the ZooKeeper their closure brings), 3.9.2 (ZooKeeper or KRaft mode) and 4.4.0 (real_kafka/distribution.py);
# - .tools/kafka-clients-legacy/<version>: real 0.10.1.1, 0.10.2.2 and 2.8.2 Java clients;
# - .tools/jmx-exporter: the Prometheus JMX exporter javaagent.
# A closure is fetched again only when its folder lacks the stamp written after a successful fetch of the module's
# current POM (so editing a POM refetches it, and a second run costs a few file reads). The missing ones are fetched
# by one Maven run (one JVM start, modules in parallel), with checksums enforced. Sourced by scripts/setup.sh.
kafka_jars_tools=$PWD/.tools
kafka_jars_modules=(
  # module            folder it fills (emptied first: a version change must not leave the old jar on a class path)
  "kafka-clients      kafka-clients"
  "kafka-2.8.2        kafka/2.8.2/libs"
  "kafka-3.3.2        kafka/3.3.2/libs"
  "kafka-3.7.2        kafka/3.7.2/libs"
  "kafka-3.9.2        kafka/3.9.2/libs"
  "kafka-4.4.0        kafka/4.4.0/libs"
  "legacy-0.10.1.1    kafka-clients-legacy/0.10.1.1"
  "legacy-0.10.2.2    kafka-clients-legacy/0.10.2.2"
  "legacy-2.8.2       kafka-clients-legacy/2.8.2"
  "jmx-exporter       jmx-exporter"
)
kafka_jars_stamp=.fetched-by-maven
# The parent's hash is part of every stamp: it pins the plugin version the copies depend on.
kafka_jars_parent=$(sha256sum scripts/maven/pom.xml)
kafka_jars_missing=()
for kafka_jars_entry in "${kafka_jars_modules[@]}"; do
  read -r kafka_jars_module kafka_jars_folder <<<"$kafka_jars_entry"
  kafka_jars_want="${kafka_jars_parent%% *} $(sha256sum "scripts/maven/$kafka_jars_module/pom.xml" | cut -d' ' -f1)"
  kafka_jars_have=
  [ -f ".tools/$kafka_jars_folder/$kafka_jars_stamp" ] && read -r kafka_jars_have <".tools/$kafka_jars_folder/$kafka_jars_stamp"
  [ "$kafka_jars_have" = "$kafka_jars_want" ] || kafka_jars_missing+=("$kafka_jars_module $kafka_jars_folder $kafka_jars_want")
done
if [ ${#kafka_jars_missing[@]} -gt 0 ]; then
  if ! command -v mvn >/dev/null; then
    echo "setup: installing maven with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends maven >/dev/null
  fi
  kafka_jars_list=
  for kafka_jars_entry in "${kafka_jars_missing[@]}"; do
    read -r kafka_jars_module kafka_jars_folder _ <<<"$kafka_jars_entry"
    rm -rf ".tools/$kafka_jars_folder"
    kafka_jars_list+=${kafka_jars_list:+,}$kafka_jars_module
  done
  echo "setup: fetching $kafka_jars_list from Maven Central (scripts/maven)" >&2
  kafka_jars_log=$(mktemp --suffix=-maven.log)
  # -C: a jar whose checksum does not match Maven Central's is an error, not a warning. -fae: every closure is tried,
  # so one failure names everything missing and the others are kept.
  kafka_jars_failed_modules=
  if ! mvn -q -B -C -fae -T 4 -f scripts/maven/pom.xml -pl "$kafka_jars_list" validate \
    "-Dkce.tools=$kafka_jars_tools" >"$kafka_jars_log" 2>&1; then
    # Maven names what it could not get in several phrasings (transfer, cached failure, plugin, collection), and
    # the same artifact as g:a:v, g:a:type:v or g:a:type:classifier:v: printed once, as g:a:v.
    kafka_jars_failed=$(grep -oE "(artifacts? could not be resolved: |Could not (transfer|find|resolve) artifact |Failure to find |Failed to collect dependencies at |Plugin |artifact )[A-Za-z0-9_.:-]+(, [A-Za-z0-9_.:-]+)*" \
      "$kafka_jars_log" | grep -oE "[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+){1,3}" |
      awk -F: '{print $1 ":" $2 ":" $NF}' | sort -u | paste -sd' ' || true)
    # Closures Maven did not fail on are complete; with none named (a plugin that did not resolve) all failed.
    kafka_jars_failed_modules=$(grep -oE "on project [A-Za-z0-9_.-]+" "$kafka_jars_log" | cut -d' ' -f3 | sort -u |
      paste -sd' ' || true)
    kafka_jars_failed_modules=${kafka_jars_failed_modules:-${kafka_jars_list//,/ }}
    echo "setup: could not fetch ${kafka_jars_failed:-the modules $kafka_jars_failed_modules} from Maven Central" \
      "(mvn -f scripts/maven/pom.xml -pl $kafka_jars_list validate; log: $kafka_jars_log)" >&2
  fi
  for kafka_jars_entry in "${kafka_jars_missing[@]}"; do
    read -r kafka_jars_module kafka_jars_folder kafka_jars_want <<<"$kafka_jars_entry"
    case " $kafka_jars_failed_modules " in
      *" $kafka_jars_module "*) ;;
      *)
        if [ -d ".tools/$kafka_jars_folder" ]; then
          echo "$kafka_jars_want" >".tools/$kafka_jars_folder/$kafka_jars_stamp"
        else
          echo "setup: Maven reported success but did not fill .tools/$kafka_jars_folder" \
            "(mvn -f scripts/maven/pom.xml -pl $kafka_jars_module validate)" >&2
          kafka_jars_failed_modules+=" $kafka_jars_module"
        fi
        ;;
    esac
  done
  [ -z "$kafka_jars_failed_modules" ] || exit 1
  rm -f "$kafka_jars_log"
fi
unset kafka_jars_tools kafka_jars_modules kafka_jars_stamp kafka_jars_parent kafka_jars_missing kafka_jars_entry \
  kafka_jars_module kafka_jars_folder kafka_jars_want kafka_jars_have kafka_jars_list kafka_jars_log kafka_jars_failed \
  kafka_jars_failed_modules
