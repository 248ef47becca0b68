// Prints, as JSON, the ApiKeys entries a Kafka broker listener advertises in ApiVersions, computed by the
// kafka-clients jar on the classpath (Kafka's own code, not the project's CSV): the independent oracle of issue 15.
//
// Usage: java -cp <kafka-clients jar>:<slf4j-api jar> ApiVersionsOracle.java BROKER|ZK_BROKER
//
// A broker without a forwarding controller and without a telemetry receiver answers with
// ApiVersionsResponse.brokerApiVersions(...), i.e. filterApis(listenerType, enableUnstableLastVersion=false,
// clientTelemetryEnabled=false): 4.3 server/.../DefaultApiVersionManager.java:88-91, 3.9
// core/.../ApiVersionManager.scala (DefaultApiVersionManager.apiVersionResponse). The signature differs:
// 4.x filterApis(ListenerType, boolean, boolean); 3.x filterApis(RecordVersion, ListenerType, boolean, boolean),
// where the broker passes its metadata version's highest record version (v2 = RecordVersion.current()).
// Only the ranges are compared, so the JSON is written here rather than by ApiVersionsResponseDataJsonConverter.

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.message.ApiMessageType.ListenerType;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersion;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersionCollection;
import org.apache.kafka.common.utils.AppInfoParser;

public class ApiVersionsOracle {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: ApiVersionsOracle BROKER|ZK_BROKER");
            System.exit(2);
        }
        ListenerType listener;
        try {
            listener = ListenerType.valueOf(args[0]);
        } catch (IllegalArgumentException e) {
            System.err.println("unknown listener type " + args[0] + " in kafka-clients " + AppInfoParser.getVersion());
            System.exit(2);
            return;
        }
        ApiVersionCollection apis = filterApis(listener);
        List<String> entries = new ArrayList<>();
        for (ApiVersion api : apis) {
            entries.add(String.format("{\"api_key\":%d,\"min_version\":%d,\"max_version\":%d}",
                api.apiKey(), api.minVersion(), api.maxVersion()));
        }
        System.out.println("{\"kafka_clients\":\"" + AppInfoParser.getVersion() + "\",\"listener\":\"" + listener
            + "\",\"api_keys\":[" + String.join(",", entries) + "]}");
    }

    private static ApiVersionCollection filterApis(ListenerType listener) throws Exception {
        Class<?> response = Class.forName("org.apache.kafka.common.requests.ApiVersionsResponse");
        for (Method m : response.getMethods()) {
            if (!m.getName().equals("filterApis")) continue;
            if (m.getParameterCount() == 3) {
                return (ApiVersionCollection) m.invoke(null, listener, false, false);
            }
            if (m.getParameterCount() == 4) {
                Class<?> recordVersion = Class.forName("org.apache.kafka.common.record.RecordVersion");
                Object current = recordVersion.getMethod("current").invoke(null);
                return (ApiVersionCollection) m.invoke(null, current, listener, false, false);
            }
        }
        throw new IllegalStateException("no ApiVersionsResponse.filterApis in kafka-clients " + AppInfoParser.getVersion());
    }
}
