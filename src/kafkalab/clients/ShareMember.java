// One member of a share group (KIP-932, queues on Kafka) with Kafka's own Java client of the release under test
// (KafkaShareConsumer, explicit acknowledgement), for tests/cluster/test_share_groups.py (kafkalab/java_clients.py
// runs it).
//
// Reads TOPIC in share group GROUP (first setting the group's share.auto.offset.reset to earliest, so that records
// written before the group's first fetch are delivered too) and prints one line per delivery on stdout:
//   "REC <partition>:<offset> <delivery count> <value> <ACCEPT|RELEASE|HOLD>"
// MODE accept: every record is accepted, except a record whose value is "poison", which is released (so it comes back
// until the group's delivery count limit archives it). MODE hold: the first batch is neither accepted nor released:
// the member prints "HELD <n>" and sleeps, holding the records' acquisition locks until it is killed.
// Stops when its standard input closes, after committing what it acknowledged; prints "STOPPED".
//
// java -cp '<release>/libs/*' ShareMember.java CLIENT_CONFIG|- BOOTSTRAP TOPIC GROUP MEMBER accept|hold

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareMember {
    private static volatile boolean stopping = false;

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: ShareMember CLIENT_CONFIG|- BOOTSTRAP TOPIC GROUP MEMBER accept|hold");
            System.exit(2);
        }
        Properties base = new Properties();
        if (!args[0].equals("-")) {
            try (Reader reader = Files.newBufferedReader(Path.of(args[0]))) {
                base.load(reader);
            }
        }
        base.put("bootstrap.servers", args[1]);
        String topic = args[2];
        String group = args[3];
        boolean hold = args[5].equals("hold");

        try (Admin admin = Admin.create(base)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp earliest = new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(earliest))).all().get();
        }

        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // the test writes nothing; EOF is the stop
                }
            } catch (IOException ignored) {
                // a closed pipe is a stop as well
            }
            stopping = true;
        });
        watcher.setDaemon(true);
        watcher.start();

        Properties props = new Properties();
        props.putAll(base);
        props.put("group.id", group);
        props.put("client.id", args[4]);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            say("SUBSCRIBED " + args[4]);
            while (!stopping) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                if (hold) {
                    for (ConsumerRecord<String, String> record : records) {
                        say("REC " + record.partition() + ":" + record.offset() + " "
                                + record.deliveryCount().orElse((short) -1) + " " + record.value() + " HOLD");
                    }
                    say("HELD " + records.count());
                    while (true) {
                        Thread.sleep(60_000);
                    }
                }
                for (ConsumerRecord<String, String> record : records) {
                    AcknowledgeType type = "poison".equals(record.value()) ? AcknowledgeType.RELEASE
                            : AcknowledgeType.ACCEPT;
                    consumer.acknowledge(record, type);
                    say("REC " + record.partition() + ":" + record.offset() + " "
                            + record.deliveryCount().orElse((short) -1) + " " + record.value() + " " + type.name());
                }
                consumer.commitSync().forEach((partition, error) -> error.ifPresent(
                        e -> say("ACKFAIL " + partition + " " + e.getClass().getSimpleName() + ": " + e.getMessage())));
            }
        }
        say("STOPPED");
    }
}
