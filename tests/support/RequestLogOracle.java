// Prints, for each request/response pair read on stdin, the requestHeader, request and response JSON a Kafka broker
// writes to kafka.request.logger, computed by the kafka-clients jar on the classpath (Kafka's own parsers and
// generated JsonConverters, not the project's reading of them): the oracle for the synthetic sample lines and, with
// "valid", for the double's check of KIP-511 software names.
//
// Usage: java -cp <kafka-clients jar>:<slf4j-api jar>:<jackson jars> RequestLogOracle.java
//   stdin, one line per request: <request frame as hex (header + body, no size)> TAB <response version> TAB
//                                <response body as hex (no size, no header)>; a response of "-" means none
//   stdout, one line each:       {"requestHeader":..,"request":..,"response":..} or {"error":".."}; an ApiVersions
//                                line adds "valid": ApiVersionsRequest.isValid(), KIP-511's check of the name and
//                                version the broker answers with INVALID_REQUEST when false
//
// The broker's own code around the converters (kafka.network.RequestConvertToJson) is server code, not in the jar;
// what it does is copied here, with its lines:
//   4.3 server/src/main/java/org/apache/kafka/network/RequestConvertToJson.java: request() calls every
//     <Name>RequestDataJsonConverter.write(data, version), except Produce, written with serializeRecords=false
//     (:528-529); response() calls write(data, version), except Fetch, with serializeRecords=false (:671);
//     requestHeaderNode (:754-763) writes RequestHeaderData at the header version without serializing records,
//     then requestApiKeyName and, for a deprecated version, requestApiVersionDeprecated=true;
//   3.9 core/src/main/scala/kafka/network/RequestConvertToJson.scala: the same exceptions (:95, :169) and
//     header node (:218-224), deprecation from ApiKeys.isVersionDeprecated (4.x asks RequestHeader).
// The request is parsed as the broker's RequestContext.parseRequest does (an unsupported ApiVersions version
// becomes an empty v0 request, RequestContext.java:112-116 at 4.3), the response with AbstractResponse.parseResponse.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;

public class RequestLogOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            ObjectNode out = JsonNodeFactory.instance.objectNode();
            try {
                String[] f = line.split("\t", -1);
                if (f.length != 3) {
                    throw new IllegalArgumentException("expected 3 tab-separated fields, got " + f.length);
                }
                ByteBuffer frame = ByteBuffer.wrap(HexFormat.of().parseHex(f[0]));
                RequestHeader header = RequestHeader.parse(frame);
                RequestContext context = new RequestContext(header, "oracle", InetAddress.getLoopbackAddress(),
                    KafkaPrincipal.ANONYMOUS, ListenerName.normalised("PLAINTEXT"), SecurityProtocol.PLAINTEXT,
                    ClientInformation.EMPTY, false);
                AbstractRequest request = context.parseRequest(frame).request;
                out.set("requestHeader", headerNode(header));
                out.set("request", write(request.data(), request.version(), header.apiKey() == ApiKeys.PRODUCE));
                if (request instanceof ApiVersionsRequest apiVersions) {
                    out.put("valid", apiVersions.isValid());
                }
                if (f[2].equals("-")) {
                    out.set("response", new TextNode(""));
                } else {
                    short version = Short.parseShort(f[1]);
                    AbstractResponse response = parseResponse(header.apiKey(),
                        ByteBuffer.wrap(HexFormat.of().parseHex(f[2])), version);
                    out.set("response", write(response.data(), version, header.apiKey() == ApiKeys.FETCH));
                }
            } catch (Exception e) {
                out.removeAll();
                out.set("error", new TextNode(e.toString()));
            }
            System.out.println(out);
        }
    }

    static JsonNode headerNode(RequestHeader header) throws Exception {
        ObjectNode node = (ObjectNode) call("org.apache.kafka.common.message.RequestHeaderDataJsonConverter",
            header.data(), header.headerVersion(), false);
        node.set("requestApiKeyName", new TextNode(header.apiKey().toString()));
        boolean deprecated;
        try {
            deprecated = (Boolean) RequestHeader.class.getMethod("isApiVersionDeprecated").invoke(header);
        } catch (NoSuchMethodException e) {
            deprecated = (Boolean) ApiKeys.class.getMethod("isVersionDeprecated", short.class)
                .invoke(header.apiKey(), header.apiVersion());
        }
        if (deprecated) {
            node.set("requestApiVersionDeprecated", BooleanNode.TRUE);
        }
        return node;
    }

    /** <Data>JsonConverter.write(data, version[, serializeRecords=false]) for the generated data class at hand. */
    static JsonNode write(ApiMessage data, short version, boolean withoutRecords) throws Exception {
        String converter = data.getClass().getName() + "JsonConverter";
        return withoutRecords ? call(converter, data, version, false) : call(converter, data, version);
    }

    static JsonNode call(String converterClass, Object data, short version, Object... extra) throws Exception {
        Class<?> converter = Class.forName(converterClass);
        Class<?>[] types = extra.length == 0
            ? new Class<?>[] {data.getClass(), short.class}
            : new Class<?>[] {data.getClass(), short.class, boolean.class};
        Object[] values = extra.length == 0 ? new Object[] {data, version} : new Object[] {data, version, extra[0]};
        return (JsonNode) converter.getMethod("write", types).invoke(null, values);
    }

    /** 4.x parseResponse(ApiKeys, Readable, short); 3.x parseResponse(ApiKeys, ByteBuffer, short). */
    static AbstractResponse parseResponse(ApiKeys api, ByteBuffer body, short version) throws Exception {
        for (Method m : AbstractResponse.class.getMethods()) {
            Class<?>[] p = m.getParameterTypes();
            if (!m.getName().equals("parseResponse") || p.length != 3 || p[0] != ApiKeys.class) {
                continue;
            }
            Object source = p[1] == ByteBuffer.class ? body
                : Class.forName("org.apache.kafka.common.protocol.ByteBufferAccessor")
                    .getConstructor(ByteBuffer.class).newInstance(body);
            return (AbstractResponse) m.invoke(null, api, source, version);
        }
        throw new IllegalStateException("no AbstractResponse.parseResponse(ApiKeys, _, short) in this kafka-clients");
    }
}
