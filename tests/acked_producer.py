"""A producer thread for the tests that count records through a change: numbered records (the value is the number),
acks=all, idempotent, one in flight, a short pause between sends; what was acknowledged, and when."""

from __future__ import annotations

import threading
import time

from kafka import KafkaProducer

from kafkalab import kafka_client


class AckedProducer(threading.Thread):
    """Writes str(n) for n = 0, 1, 2, ... to `topic` until `stop` is set; `acked` and `times` grow together."""

    def __init__(self, bootstrap: str, topic: str, pause_s: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.pause_s = pause_s
        self.producer = KafkaProducer(
            **kafka_client.settings(),
            bootstrap_servers=bootstrap,
            acks="all",
            retries=2**31 - 1,
            enable_idempotence=True,
            max_in_flight_requests_per_connection=1,
        )
        self.stop = threading.Event()
        self.acked: list[int] = []
        self.times: list[float] = []
        self.errors: list[str] = []

    def run(self) -> None:
        seq = 0
        while not self.stop.is_set():
            try:
                self.producer.send(self.topic, str(seq).encode()).get(timeout=60)
                self.acked.append(seq)
                self.times.append(time.monotonic())
            except Exception as exc:  # kafka-python raises KafkaError subclasses; an unacked record is not counted
                self.errors.append(repr(exc))
            seq += 1
            time.sleep(self.pause_s)
        self.producer.flush()
        self.producer.close()

    def longest_gap(self) -> float:
        return max((b - a for a, b in zip(self.times, self.times[1:], strict=False)), default=0.0)
