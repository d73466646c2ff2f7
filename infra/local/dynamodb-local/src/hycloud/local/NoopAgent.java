package hycloud.local;

import java.lang.instrument.Instrumentation;

/**
 * Stands in for LocalStack's DynamoDB Local agent, which is always passed with -javaagent.
 *
 * LocalStack's agent only raises the per-table GSI limit; the project does not need that, so
 * this agent does nothing.
 */
public final class NoopAgent {
    private NoopAgent() {}

    public static void premain(String args, Instrumentation instrumentation) {}
}
