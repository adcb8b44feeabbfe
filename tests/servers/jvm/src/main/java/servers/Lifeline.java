package servers;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;

/**
 * Runs another program's main class in this JVM, and ends the JVM when standard input
 * closes.
 *
 * <pre>java -cp ... servers.Lifeline kafka.Kafka server.properties</pre>
 *
 * tests/servers/jvm.py starts every JVM test server with a pipe as its stdin and never
 * writes to it. When the Python side closes the pipe, or dies (the kernel closes it then),
 * the read below sees end-of-file and calls {@link System#exit}, so the program's
 * shutdown hooks run (Kafka shuts down cleanly). If they take longer than
 * {@code -Dlifeline.graceSeconds} (default 15), the JVM is halted. A dying pytest
 * therefore never leaves a JVM behind.
 */
public final class Lifeline {
    private Lifeline() {}

    public static void main(String[] args) throws Throwable {
        if (args.length == 0) {
            System.err.println("usage: servers.Lifeline MAIN_CLASS [ARGS...]");
            System.exit(2);
        }
        watchStdin();
        Method main = Class.forName(args[0]).getMethod("main", String[].class);
        try {
            main.invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** Exit when stdin reaches end-of-file (a daemon thread: it never keeps the JVM up). */
    public static void watchStdin() {
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // the parent writes nothing; only the end matters
                }
            } catch (IOException ignored) {
                // a broken pipe ends it the same way
            }
            exitWithin(Long.getLong("lifeline.graceSeconds", 15));
        }, "lifeline");
        watcher.setDaemon(true);
        watcher.start();
    }

    /** System.exit (shutdown hooks run), and halt if that has not ended the JVM in time. */
    public static void exitWithin(long graceSeconds) {
        haltAfter(graceSeconds);
        System.exit(0);
    }

    /** Halt the JVM in graceSeconds, whatever it is doing then (a daemon timer). */
    public static void haltAfter(long graceSeconds) {
        Thread halter = new Thread(() -> {
            try {
                Thread.sleep(graceSeconds * 1000);
            } catch (InterruptedException ignored) {
                // halt now
            }
            System.err.println("lifeline: shutdown took over " + graceSeconds + " s, halting");
            Runtime.getRuntime().halt(1);
        }, "lifeline-halt");
        halter.setDaemon(true);
        halter.start();
    }
}
