package servers;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.MiniDFSNNTopology;
import org.apache.hadoop.minikdc.MiniKdc;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * Hadoop's own mini clusters on loopback, for tests (tests/servers/hadoop.py runs this).
 *
 * <pre>java -cp ... servers.MiniClusters --mode hdfs|hdfs-ha|hdfs-kerberos|yarn --dir DIR</pre>
 *
 * <ul>
 *   <li>{@code hdfs}: a MiniDFSCluster, one NameNode and one DataNode;</li>
 *   <li>{@code hdfs-ha}: two NameNodes of nameservice {@code minidfs-ns} (nn1 active,
 *       nn2 standby, shared edits on local disk) and one DataNode;</li>
 *   <li>{@code hdfs-kerberos}: {@code hdfs} secured by a MiniKdc: Kerberos RPC, SPNEGO on
 *       WebHDFS, block tokens; keytabs for {@code hdfs/localhost}, {@code HTTP/localhost}
 *       and the user {@code client} in DIR/keytabs;</li>
 *   <li>{@code yarn}: {@code hdfs} and a MiniYARNCluster (ResourceManager, one NodeManager).</li>
 * </ul>
 *
 * Every port is ephemeral on 127.0.0.1. The HDFS root is made world-writable. Once ready
 * it prints ONE line of JSON to stdout (ports, the nameservice, keytabs, krb5.conf, the
 * ResourceManager's addresses, and DIR/conf with a core-site.xml, hdfs-site.xml and
 * yarn-site.xml for clients), then reads commands from stdin, one a line:
 * {@code failover} (hdfs-ha: the active NameNode becomes standby and the other active;
 * prints the new state as a JSON line). End-of-file on stdin shuts everything down
 * cleanly and ends the JVM, as {@link Lifeline} does.
 */
public final class MiniClusters {
    private static final String NAMESERVICE = "minidfs-ns";

    private MiniKdc kdc;
    private MiniDFSCluster dfs;
    private MiniYARNCluster yarn;

    public static void main(String[] args) throws Exception {
        String mode = "hdfs";
        File dir = new File("mini-clusters");
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (args[i].equals("--mode")) mode = args[i + 1];
            else if (args[i].equals("--dir")) dir = new File(args[i + 1]);
            else throw new IllegalArgumentException("unknown option " + args[i]);
        }
        if (!List.of("hdfs", "hdfs-ha", "hdfs-kerberos", "yarn").contains(mode)) {
            throw new IllegalArgumentException("unknown mode " + mode);
        }
        MiniClusters clusters = new MiniClusters();
        Runtime.getRuntime().addShutdownHook(new Thread(clusters::shutdown, "mini-clusters-shutdown"));
        Map<String, Object> ready;
        try {
            ready = clusters.start(mode, dir.getAbsoluteFile());
        } catch (Throwable e) {  // the clusters' non-daemon threads would keep the JVM up
            e.printStackTrace();
            System.out.println(json(Map.of("error", String.valueOf(e))));
            Lifeline.haltAfter(Long.getLong("lifeline.graceSeconds", 30));
            clusters.shutdown();
            System.exit(1);
            return;
        }
        System.out.println(json(ready));
        System.out.flush();
        clusters.serve();
        // stdin closed: stop the clusters before the JVM's shutdown begins (Hadoop's own
        // shutdown hooks refuse to be removed during it), halting if that hangs
        Lifeline.haltAfter(Long.getLong("lifeline.graceSeconds", 30));
        clusters.shutdown();
        System.exit(0);
    }

    private Map<String, Object> start(String mode, File dir) throws Exception {
        dir.mkdirs();
        System.setProperty("test.build.data", dir.getPath());
        Configuration conf = new HdfsConfiguration();
        conf.setInt("dfs.replication", 1);
        conf.setBoolean("dfs.webhdfs.enabled", true);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("mode", mode);

        if (mode.equals("hdfs-kerberos")) {
            out.put("kerberos", startKdc(conf, dir));
        }
        MiniDFSCluster.Builder builder = new MiniDFSCluster.Builder(conf, new File(dir, "dfs")).numDataNodes(1);
        if (mode.equals("hdfs-ha")) builder.nnTopology(MiniDFSNNTopology.simpleHATopology());
        dfs = builder.build();
        boolean ha = mode.equals("hdfs-ha");
        if (ha) {
            dfs.transitionToActive(0);
            conf.set("dfs.nameservices", NAMESERVICE);
            conf.set("dfs.ha.namenodes." + NAMESERVICE, "nn1,nn2");
            for (int i = 0; i < 2; i++) {
                String id = "nn" + (i + 1);
                conf.set("dfs.namenode.rpc-address." + NAMESERVICE + "." + id, "127.0.0.1:" + rpcPort(i));
                conf.set("dfs.namenode.http-address." + NAMESERVICE + "." + id, "127.0.0.1:" + httpPort(i));
            }
            conf.set("dfs.client.failover.proxy.provider." + NAMESERVICE,
                     "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider");
            conf.set("fs.defaultFS", "hdfs://" + NAMESERVICE);
            out.put("nameservice", NAMESERVICE);
        } else {
            conf.set("fs.defaultFS", "hdfs://127.0.0.1:" + rpcPort(0));
            conf.set("dfs.namenode.http-address", "127.0.0.1:" + httpPort(0));
        }
        dfs.waitActive();
        FileSystem fs = dfs.getFileSystem(0);
        fs.setPermission(new Path("/"), new FsPermission((short) 0777));
        out.put("fs_default", conf.get("fs.defaultFS"));
        out.put("namenodes", nameNodes(ha));

        if (mode.equals("yarn")) {
            out.put("yarn", startYarn(conf));
        }
        File confDir = new File(dir, "conf");
        confDir.mkdirs();
        for (String name : List.of("core-site.xml", "hdfs-site.xml", "yarn-site.xml")) {
            writeSite(conf, new File(confDir, name));
        }
        out.put("conf_dir", confDir.getPath());
        return out;
    }

    private Map<String, Object> startKdc(Configuration conf, File dir) throws Exception {
        Properties kdcConf = MiniKdc.createConf();
        kdcConf.setProperty(MiniKdc.KDC_BIND_ADDRESS, "127.0.0.1");
        File kdcDir = new File(dir, "kdc");
        kdcDir.mkdirs();
        kdc = new MiniKdc(kdcConf, kdcDir);
        kdc.start();  // also points java.security.krb5.conf at its krb5.conf
        String realm = kdc.getRealm();
        File keytabs = new File(dir, "keytabs");
        keytabs.mkdirs();
        File hdfsKeytab = new File(keytabs, "hdfs.keytab");
        File clientKeytab = new File(keytabs, "client.keytab");
        kdc.createPrincipal(hdfsKeytab, "hdfs/localhost", "HTTP/localhost");
        kdc.createPrincipal(clientKeytab, "client");
        String service = "hdfs/localhost@" + realm;
        conf.set("hadoop.security.authentication", "kerberos");
        conf.set("hadoop.security.auth_to_local", "RULE:[1:$1] RULE:[2:$1] DEFAULT");
        conf.set("dfs.namenode.kerberos.principal", service);
        conf.set("dfs.namenode.keytab.file", hdfsKeytab.getPath());
        conf.set("dfs.datanode.kerberos.principal", service);
        conf.set("dfs.datanode.keytab.file", hdfsKeytab.getPath());
        conf.set("dfs.web.authentication.kerberos.principal", "HTTP/localhost@" + realm);
        conf.set("dfs.web.authentication.kerberos.keytab", hdfsKeytab.getPath());
        // Hadoop 3.3+ authenticates every web endpoint, WebHDFS included, with the
        // hadoop.http.authentication.* filter, whose type defaults to "simple"
        conf.set("hadoop.http.authentication.type", "kerberos");
        conf.set("hadoop.http.authentication.simple.anonymous.allowed", "false");
        conf.set("hadoop.http.authentication.kerberos.principal", "HTTP/localhost@" + realm);
        conf.set("hadoop.http.authentication.kerberos.keytab", hdfsKeytab.getPath());
        conf.setBoolean("dfs.block.access.token.enable", true);
        // DataNodes on unprivileged ports without SASL data transfer or HTTPS (tests only)
        conf.setBoolean("ignore.secure.ports.for.testing", true);
        UserGroupInformation.setConfiguration(conf);
        UserGroupInformation.loginUserFromKeytab(service, hdfsKeytab.getPath());

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("realm", realm);
        out.put("kdc_port", kdc.getPort());
        out.put("krb5_conf", kdc.getKrb5conf().getAbsolutePath());
        out.put("principal", "client@" + realm);
        out.put("keytab", clientKeytab.getPath());
        out.put("service_principal", service);
        out.put("spnego_principal", "HTTP/localhost@" + realm);
        out.put("service_keytab", hdfsKeytab.getPath());
        return out;
    }

    private Map<String, Object> startYarn(Configuration conf) throws Exception {
        YarnConfiguration yconf = new YarnConfiguration(conf);
        yconf.setBoolean("yarn.nodemanager.vmem-check-enabled", false);
        yconf.setBoolean("yarn.nodemanager.pmem-check-enabled", false);
        // a nearly full test disk must not make the only NodeManager unhealthy
        yconf.setFloat("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", 100f);
        yconf.setInt("yarn.nodemanager.resource.memory-mb", 4096);
        yconf.setInt("yarn.nodemanager.resource.cpu-vcores", 2);
        yconf.setInt("yarn.scheduler.minimum-allocation-mb", 256);
        // the CapacityScheduler wants a capacity-scheduler.xml; FIFO has one queue, "default"
        yconf.set(YarnConfiguration.RM_SCHEDULER,
                  "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
        yarn = new MiniYARNCluster("seatunnel-ckpt", 1, 1, 1);  // its files go to ./target
        yarn.init(yconf);
        yarn.start();
        Configuration started = yarn.getConfig();
        long deadline = System.currentTimeMillis() + 60_000;
        while (yarn.getResourceManager().getRMContext().getRMNodes().isEmpty()) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no NodeManager registered");
            Thread.sleep(100);
        }
        for (String key : List.of(YarnConfiguration.RM_ADDRESS, YarnConfiguration.RM_SCHEDULER_ADDRESS,
                                  YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS, YarnConfiguration.RM_ADMIN_ADDRESS,
                                  YarnConfiguration.RM_WEBAPP_ADDRESS, YarnConfiguration.RM_SCHEDULER)) {
            conf.set(key, started.get(key));
        }
        for (String key : List.of("yarn.nodemanager.vmem-check-enabled", "yarn.nodemanager.pmem-check-enabled")) {
            conf.set(key, "false");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("rm_address", started.get(YarnConfiguration.RM_ADDRESS));
        out.put("rm_scheduler_address", started.get(YarnConfiguration.RM_SCHEDULER_ADDRESS));
        out.put("rm_webapp_address", started.get(YarnConfiguration.RM_WEBAPP_ADDRESS));
        out.put("node_managers", yarn.getResourceManager().getRMContext().getRMNodes().size());
        return out;
    }

    private int rpcPort(int nn) {
        return dfs.getNameNode(nn).getNameNodeAddress().getPort();
    }

    private int httpPort(int nn) {
        return dfs.getNameNode(nn).getHttpAddress().getPort();
    }

    private List<Object> nameNodes(boolean ha) {
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < (ha ? 2 : 1); i++) {
            Map<String, Object> nn = new LinkedHashMap<>();
            nn.put("id", "nn" + (i + 1));
            nn.put("rpc_port", rpcPort(i));
            nn.put("http_port", httpPort(i));
            nn.put("state", dfs.getNameNode(i).isActiveState() ? "active" : "standby");
            out.add(nn);
        }
        return out;
    }

    /** Commands from stdin until end-of-file. */
    private void serve() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            try {
                if (line.equals("failover") && dfs.getNumNameNodes() == 2) {
                    int active = dfs.getNameNode(0).isActiveState() ? 0 : 1;
                    dfs.transitionToStandby(active);
                    dfs.transitionToActive(1 - active);
                    System.out.println(json(Map.of("namenodes", nameNodes(true))));
                } else if (!line.isEmpty()) {
                    System.out.println(json(Map.of("error", "unknown command: " + line)));
                }
            } catch (Exception e) {
                System.out.println(json(Map.of("error", String.valueOf(e))));
            }
            System.out.flush();
        }
    }

    private synchronized void shutdown() {
        try {
            if (yarn != null) yarn.stop();
        } catch (RuntimeException e) {
            e.printStackTrace();
        }
        try {
            if (dfs != null) dfs.shutdown(true);
        } catch (RuntimeException e) {
            e.printStackTrace();
        }
        if (kdc != null) kdc.stop();
        yarn = null;
        dfs = null;
        kdc = null;
    }

    /** The settings that are not Hadoop's defaults, as a *-site.xml a client can load. */
    private static void writeSite(Configuration conf, File file) throws IOException {
        Configuration site = new Configuration(false);
        for (Iterator<Map.Entry<String, String>> it = conf.iterator(); it.hasNext(); ) {
            String key = it.next().getKey();
            String[] sources = conf.getPropertySources(key);
            String source = sources == null || sources.length == 0 ? "" : sources[sources.length - 1];
            // MiniDFSCluster maps racks with a class of its own test jar, which a client
            // (Spark's YARN scheduler resolves racks) does not have: a client keeps the default
            if (key.equals("net.topology.node.switch.mapping.impl")) continue;
            if (!source.endsWith("-default.xml")) site.set(key, conf.getRaw(key));
        }
        try (OutputStream os = new FileOutputStream(file)) {
            site.writeXml(os);
        }
    }

    /** Just enough JSON for strings, numbers, lists and maps. */
    static String json(Object value) {
        if (value == null) return "null";
        if (value instanceof Number || value instanceof Boolean) return value.toString();
        if (value instanceof Map) {
            StringBuilder sb = new StringBuilder("{");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
                if (sb.length() > 1) sb.append(", ");
                sb.append(json(String.valueOf(e.getKey()))).append(": ").append(json(e.getValue()));
            }
            return sb.append('}').toString();
        }
        if (value instanceof List) {
            StringBuilder sb = new StringBuilder("[");
            for (Object item : (List<?>) value) {
                if (sb.length() > 1) sb.append(", ");
                sb.append(json(item));
            }
            return sb.append(']').toString();
        }
        StringBuilder sb = new StringBuilder("\"");
        for (char c : value.toString().toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.append('"').toString();
    }
}
