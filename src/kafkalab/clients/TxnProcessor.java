// A transactional read-process-write loop with Kafka's own Java clients (the release under test's kafka-clients jar),
// for kafkalab/transactions.py: what exactly-once pipelines (Kafka Streams, Flink, Spark's transactional sinks) do.
//
// It reads IN with a read_committed consumer of GROUP, and for each poll writes one transaction to OUT: one record per
// input record, keyed "<partition>:<offset>" (so a transaction spans OUT's partitions), valued
// "<partition>:<offset>:<transaction>:<records in it>", with the input offsets sent to the same transaction. Every
// ABORT_EVERY-th transaction is aborted on purpose after its records were sent (the records are in the log, and must
// never be read by a read_committed consumer). A transaction the cluster fails is aborted and its input read again.
// A Java client of this release speaks the cluster's finalized transaction.version: 2 (KIP-890) from Kafka 4.0's
// feature levels on.
//
// Prints one line per transaction on stdout: "COMMIT <n> <records> <epoch ms>" or "ABORT <n> <records> <why>"; a
// fatal error (fenced, out of order, refused) prints "FATAL <why>" and exits 3. Stops after the transaction in hand
// when its standard input closes, and prints "STOPPED <n>".
//
// java -cp '<release>/libs/*' TxnProcessor.java CLIENT_CONFIG|- BOOTSTRAP IN OUT GROUP TRANSACTIONAL_ID ABORT_EVERY

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnProcessor {
    private static volatile boolean stopping = false;

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: TxnProcessor CLIENT_CONFIG|- BOOTSTRAP IN OUT GROUP TRANSACTIONAL_ID ABORT_EVERY");
            System.exit(2);
        }
        Properties base = new Properties();
        if (!args[0].equals("-")) {
            try (Reader reader = Files.newBufferedReader(Path.of(args[0]))) {
                base.load(reader);
            }
        }
        base.put("bootstrap.servers", args[1]);
        String in = args[2];
        String out = args[3];
        int abortEvery = Integer.parseInt(args[6]);

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

        Properties consumerProps = new Properties();
        consumerProps.putAll(base);
        consumerProps.put("group.id", args[4]);
        consumerProps.put("isolation.level", "read_committed");
        consumerProps.put("enable.auto.commit", "false");
        consumerProps.put("auto.offset.reset", "earliest");
        consumerProps.put("max.poll.records", "100");
        consumerProps.put("key.deserializer", StringDeserializer.class.getName());
        consumerProps.put("value.deserializer", StringDeserializer.class.getName());

        Properties producerProps = new Properties();
        producerProps.putAll(base);
        producerProps.put("transactional.id", args[5]);
        producerProps.put("acks", "all");
        producerProps.put("key.serializer", StringSerializer.class.getName());
        producerProps.put("value.serializer", StringSerializer.class.getName());

        long transaction = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps);
                KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            producer.initTransactions();
            consumer.subscribe(List.of(in));
            while (!stopping) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                transaction++;
                int count = records.count();
                try {
                    producer.beginTransaction();
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (ConsumerRecord<String, String> record : records) {
                        String id = record.partition() + ":" + record.offset();
                        producer.send(new ProducerRecord<>(out, id, id + ":" + transaction + ":" + count));
                        next.put(new TopicPartition(record.topic(), record.partition()),
                                new OffsetAndMetadata(record.offset() + 1));
                    }
                    producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                    if (abortEvery > 0 && transaction % abortEvery == 0) {
                        producer.abortTransaction();
                        rewind(consumer);
                        say("ABORT " + transaction + " " + count + " on-purpose");
                        continue;
                    }
                    retryingTimeouts(producer::commitTransaction);
                    say("COMMIT " + transaction + " " + count + " " + System.currentTimeMillis());
                } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
                        | UnsupportedVersionException fatal) {
                    say("FATAL " + oneLine(fatal));
                    System.exit(3);
                } catch (KafkaException failed) {
                    // The cluster failed this transaction (a coordinator or a partition leader gone, a rebalance):
                    // abort it and read its input again from the group's committed offsets.
                    retryingTimeouts(producer::abortTransaction);
                    rewind(consumer);
                    say("ABORT " + transaction + " " + count + " " + oneLine(failed));
                }
            }
        }
        say("STOPPED " + transaction);
    }

    /** The call again after a timeout (allowed for commitTransaction and abortTransaction: the call resumes), up to
     *  ten times; other errors go to the caller. */
    private static void retryingTimeouts(Runnable call) {
        for (int attempt = 1; ; attempt++) {
            try {
                call.run();
                return;
            } catch (TimeoutException timeout) {
                if (attempt >= 10) {
                    throw timeout;
                }
            }
        }
    }

    /** Back to the group's committed offsets (read_committed: the coordinator answers once no commit is pending). */
    private static void rewind(KafkaConsumer<String, String> consumer) {
        Set<TopicPartition> assigned = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned, Duration.ofSeconds(60));
        for (TopicPartition partition : assigned) {
            OffsetAndMetadata offset = committed.get(partition);
            if (offset == null) {
                consumer.seekToBeginning(List.of(partition));
            } else {
                consumer.seek(partition, offset.offset());
            }
        }
    }

    private static String oneLine(Throwable error) {
        return (error.getClass().getSimpleName() + ": " + error.getMessage()).replaceAll("\\s+", " ");
    }
}
