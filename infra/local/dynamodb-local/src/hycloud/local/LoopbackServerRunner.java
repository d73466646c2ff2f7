package hycloud.local;

import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * Starts DynamoDB Local like its own ServerRunner, but bound to 127.0.0.1.
 *
 * DynamoDB Local has no host option and its Jetty connector listens on all interfaces; the
 * connector is reachable through the proxy server's private field, so the host is set there
 * before the server starts.
 */
public final class LoopbackServerRunner {
    private LoopbackServerRunner() {}

    public static void main(String[] args) throws Exception {
        String host = System.getProperty("hycloud.ddb.host", "127.0.0.1");
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        Field field = DynamoDBProxyServer.class.getDeclaredField("server");
        field.setAccessible(true);
        Server server = (Server) field.get(proxy);
        for (Connector connector : server.getConnectors()) {
            if (connector instanceof ServerConnector) {
                ((ServerConnector) connector).setHost(host);
            }
        }
        proxy.start();
        System.out.println("DynamoDB Local listening on " + host);
    }
}
