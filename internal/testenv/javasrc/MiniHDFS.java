// MiniHDFS runs Hadoop's MiniDFSCluster (one namenode, one datanode, both on loopback
// with ports chosen by the system) for the tiered-storage tests: testenv/hdfs.go compiles
// it against hadoop-client-minicluster from Maven Central and starts it. It prints
// "MAGNETAR-HDFS-READY hdfs://127.0.0.1:<port>" once the cluster is active, and shuts the
// cluster down on SIGTERM.
import java.io.File;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

public class MiniHDFS {
  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: MiniHDFS <data dir>");
      System.exit(2);
    }
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(args[0]).getAbsolutePath());
    // Nothing on a fixed port: other servers share the machine.
    conf.set("dfs.namenode.http-address", "127.0.0.1:0");
    conf.set("dfs.datanode.address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    conf.setBoolean("dfs.permissions.enabled", false);
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).nameNodePort(0).build();
    Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
    cluster.waitActive();
    System.out.println("MAGNETAR-HDFS-READY hdfs://127.0.0.1:" + cluster.getNameNodePort());
    System.out.flush();
    Thread.currentThread().join();
  }
}
