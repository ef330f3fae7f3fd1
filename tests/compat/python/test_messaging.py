"""Produce and consume with the official Python client: what the client's own
tests/pulsar_test.py covers for messaging (sync and async sends, keys, properties, event
time, acks, subscription types, batching, compression, chunking, partitions, readers,
seeks, redelivery, dead letters, delayed delivery, patterns)."""

import threading
import time

import pulsar
import pytest
from pulsar import ConsumerType, CompressionType, InitialPosition, MessageId

from conftest import RECEIVE_MS, admin, eventually, topic_path


def drain(consumer, n):
    out = []
    for _ in range(n):
        m = consumer.receive(timeout_millis=RECEIVE_MS)
        out.append(m)
        consumer.acknowledge(m)
    return out


def test_produce_consume_with_key_properties_event_time(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, producer_name="py-producer")
    msg_id = producer.send(b"hello", properties={"a": "1", "b": "two"}, partition_key="k1", event_timestamp=1234)
    m = consumer.receive(timeout_millis=RECEIVE_MS)
    assert m.data() == b"hello"
    assert m.properties() == {"a": "1", "b": "two"}
    assert m.partition_key() == "k1"
    assert m.event_timestamp() == 1234
    assert m.publish_timestamp() > 0
    assert m.message_id() == msg_id
    assert m.topic_name() == topic
    consumer.acknowledge(m)
    with pytest.raises(pulsar.Timeout):
        consumer.receive(timeout_millis=300)


def test_send_async_keeps_order(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=5)
    done = threading.Semaphore(0)
    results = []

    def cb(res, mid):
        results.append(res)
        done.release()

    for i in range(200):
        producer.send_async(str(i).encode(), cb)
    producer.flush()
    for _ in range(200):
        assert done.acquire(timeout=60)
    assert all(r == pulsar.Result.Ok for r in results)
    got = [int(m.data()) for m in drain(consumer, 200)]
    assert got == list(range(200))


@pytest.mark.parametrize("compression", [CompressionType.LZ4, CompressionType.ZLib, CompressionType.ZSTD, CompressionType.SNAPPY])
def test_compression(client, topic, compression):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, compression_type=compression, batching_enabled=True)
    body = b"compress me " * 500
    for _ in range(10):
        producer.send_async(body, None)
    producer.flush()
    assert [m.data() for m in drain(consumer, 10)] == [body] * 10


def test_shared_subscription_spreads_and_redelivers_on_close(client, topic):
    c1 = client.subscribe(topic, "shared", consumer_type=ConsumerType.Shared, receiver_queue_size=10)
    c2 = client.subscribe(topic, "shared", consumer_type=ConsumerType.Shared, receiver_queue_size=10)
    producer = client.create_producer(topic)
    for i in range(40):
        producer.send(str(i).encode())
    seen = set()
    # c1 takes some and closes without acknowledging: they go to c2.
    unacked = [c1.receive(timeout_millis=RECEIVE_MS) for _ in range(3)]
    c1.close()
    while len(seen) < 40:
        m = c2.receive(timeout_millis=RECEIVE_MS)
        seen.add(int(m.data()))
        c2.acknowledge(m)
    assert seen == set(range(40))
    assert all(int(m.data()) in seen for m in unacked)


def test_exclusive_subscription_refuses_second_consumer(client, topic):
    client.subscribe(topic, "excl", consumer_type=ConsumerType.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "excl", consumer_type=ConsumerType.Exclusive)


def test_failover_subscription_has_one_active_consumer(client, topic):
    c1 = client.subscribe(topic, "fo", consumer_type=ConsumerType.Failover, consumer_name="a")
    c2 = client.subscribe(topic, "fo", consumer_type=ConsumerType.Failover, consumer_name="b")
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(str(i).encode())
    got = []
    for c in (c1, c2):
        try:
            while True:
                m = c.receive(timeout_millis=2000)
                got.append((c, int(m.data())))
                c.acknowledge(m)
        except pulsar.Timeout:
            pass
    assert sorted(v for _, v in got) == list(range(10))
    assert len({c for c, _ in got}) == 1, "a failover subscription delivers to one consumer at a time"


def test_key_shared_keeps_each_key_on_one_consumer(client, topic):
    c1 = client.subscribe(topic, "ks", consumer_type=ConsumerType.KeyShared)
    c2 = client.subscribe(topic, "ks", consumer_type=ConsumerType.KeyShared)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(100):
        producer.send(str(i).encode(), partition_key="key-%d" % (i % 10))
    owner = {}
    n = 0
    while n < 100:
        for c in (c1, c2):
            try:
                m = c.receive(timeout_millis=200)
            except pulsar.Timeout:
                continue
            assert owner.setdefault(m.partition_key(), c) is c, "key moved between consumers"
            c.acknowledge(m)
            n += 1


def test_cumulative_ack_and_redelivery_of_the_rest(client, topic):
    consumer = client.subscribe(topic, "cum")
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(str(i).encode())
    msgs = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(10)]
    consumer.acknowledge_cumulative(msgs[4])
    consumer.close()
    consumer = client.subscribe(topic, "cum")
    assert int(consumer.receive(timeout_millis=RECEIVE_MS).data()) == 5


def test_negative_ack_redelivers_with_count(client, topic):
    consumer = client.subscribe(topic, "nack", consumer_type=ConsumerType.Shared, negative_ack_redelivery_delay_ms=100)
    producer = client.create_producer(topic)
    producer.send(b"again")
    m = consumer.receive(timeout_millis=RECEIVE_MS)
    assert m.redelivery_count() == 0
    consumer.negative_acknowledge(m)
    m = consumer.receive(timeout_millis=RECEIVE_MS)
    assert m.data() == b"again" and m.redelivery_count() == 1
    consumer.acknowledge(m)


def test_ack_timeout_redelivers(client, topic):
    # 10 s is the least the client accepts.
    consumer = client.subscribe(topic, "ackto", consumer_type=ConsumerType.Shared, unacked_messages_timeout_ms=10000)
    producer = client.create_producer(topic)
    producer.send(b"x")
    consumer.receive(timeout_millis=RECEIVE_MS)
    m = consumer.receive(timeout_millis=RECEIVE_MS)
    assert m.data() == b"x"
    consumer.acknowledge(m)


def test_dead_letter_topic(client, topic):
    dlq = topic + "-DLQ"
    policy = pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=1, dead_letter_topic=dlq)
    consumer = client.subscribe(topic, "dlq", consumer_type=ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=100, dead_letter_policy=policy)
    dlq_consumer = client.subscribe(dlq, "dlq-sub")
    producer = client.create_producer(topic)
    producer.send(b"poison")
    for _ in range(2):
        consumer.negative_acknowledge(consumer.receive(timeout_millis=RECEIVE_MS))
    m = dlq_consumer.receive(timeout_millis=RECEIVE_MS)
    assert m.data() == b"poison"


def test_delayed_delivery(client, topic):
    consumer = client.subscribe(topic, "delayed", consumer_type=ConsumerType.Shared)
    producer = client.create_producer(topic)
    producer.send(b"later", deliver_after=__import__("datetime").timedelta(seconds=2))
    producer.send(b"now")
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == b"now"
    m = consumer.receive(timeout_millis=RECEIVE_MS)
    assert m.data() == b"later"


def test_batching_and_batch_index_ack(client, topic):
    consumer = client.subscribe(topic, "batch", consumer_type=ConsumerType.Shared, batch_index_ack_enabled=True)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10, batching_max_publish_delay_ms=1000)
    for i in range(10):
        producer.send_async(str(i).encode(), None)
    producer.flush()
    msgs = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(10)]
    assert len({(m.message_id().ledger_id(), m.message_id().entry_id()) for m in msgs}) == 1, "one batch entry"
    for m in msgs[:5]:
        consumer.acknowledge(m)
    consumer.close()
    consumer = client.subscribe(topic, "batch", consumer_type=ConsumerType.Shared, batch_index_ack_enabled=True)
    got = sorted(int(consumer.receive(timeout_millis=RECEIVE_MS).data()) for _ in range(5))
    assert got == [5, 6, 7, 8, 9]


def test_chunking_large_message(client, topic):
    consumer = client.subscribe(topic, "chunks")
    producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
    body = bytes(range(256)) * (6 * 1024 * 1024 // 256)  # 6 MiB, over the 5 MiB message limit
    producer.send(body)
    m = consumer.receive(timeout_millis=RECEIVE_MS)
    assert m.data() == body


def test_partitioned_topic_round_robin(client, topic):
    admin("PUT", topic_path(topic) + "/partitions", 3)
    assert admin("GET", topic_path(topic) + "/partitions")["partitions"] == 3
    consumer = client.subscribe(topic, "parts")
    producer = client.create_producer(topic, message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
                                      batching_enabled=False)
    for i in range(30):
        producer.send(str(i).encode())
    msgs = drain(consumer, 30)
    assert sorted(int(m.data()) for m in msgs) == list(range(30))
    assert len({m.topic_name() for m in msgs}) == 3


def test_pattern_subscription(client):
    base = "persistent://public/default/py-pattern-" + str(int(time.time() * 1000))
    for suffix in ("a", "b"):
        client.create_producer(base + "-" + suffix).send(suffix.encode())
    consumer = client.subscribe(__import__("re").compile(base.replace("persistent://", "persistent://") + "-.*"), "pat",
                                initial_position=InitialPosition.Earliest, pattern_auto_discovery_period=1)
    got = {consumer.receive(timeout_millis=RECEIVE_MS).data() for _ in range(2)}
    assert got == {b"a", b"b"}


def test_reader_from_earliest_latest_and_message_id(client, topic):
    producer = client.create_producer(topic)
    ids = [producer.send(str(i).encode()) for i in range(10)]
    r = client.create_reader(topic, MessageId.earliest)
    assert [int(r.read_next(RECEIVE_MS).data()) for _ in range(10)] == list(range(10))
    assert not r.has_message_available()
    r2 = client.create_reader(topic, ids[4])
    assert int(r2.read_next(RECEIVE_MS).data()) == 5
    r3 = client.create_reader(topic, ids[4], start_message_id_inclusive=True)
    assert int(r3.read_next(RECEIVE_MS).data()) == 4
    r4 = client.create_reader(topic, MessageId.latest)
    producer.send(b"new")
    assert r4.read_next(RECEIVE_MS).data() == b"new"


def test_seek_by_message_id_and_time(client, topic):
    consumer = client.subscribe(topic, "seek")
    producer = client.create_producer(topic)
    ids = [producer.send(str(i).encode()) for i in range(10)]
    drain(consumer, 10)
    consumer.seek(ids[2])
    assert int(consumer.receive(timeout_millis=RECEIVE_MS).data()) in (2, 3)
    consumer.seek(0)  # publish time 0: everything again
    assert int(consumer.receive(timeout_millis=RECEIVE_MS).data()) == 0


def test_get_last_message_id(client, topic):
    consumer = client.subscribe(topic, "last")
    producer = client.create_producer(topic)
    last = None
    for i in range(3):
        last = producer.send(str(i).encode())
    got = consumer.get_last_message_id()
    assert (got.ledger_id(), got.entry_id()) == (last.ledger_id(), last.entry_id())


def test_unsubscribe_drops_the_subscription(client, topic):
    consumer = client.subscribe(topic, "gone")
    client.create_producer(topic).send(b"x")
    assert "gone" in admin("GET", topic_path(topic) + "/subscriptions")
    consumer.unsubscribe()
    assert eventually(lambda: "gone" not in admin("GET", topic_path(topic) + "/subscriptions"))


def test_producer_access_mode_exclusive(client, topic):
    # Pulsar's AbstractTopic.incrementTopicEpochIfNeeded: a second exclusive producer is
    # fenced, a shared one is busy.
    client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Exclusive)
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Exclusive)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Shared)


def test_message_too_big_is_refused(client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    with pytest.raises(pulsar.MessageTooBig):
        producer.send(b"x" * (6 * 1024 * 1024))


def test_table_view(client, topic):
    producer = client.create_producer(topic)
    producer.send(b"v1", partition_key="a")
    producer.send(b"v2", partition_key="a")
    producer.send(b"b1", partition_key="b")
    tv = client.create_table_view(topic)
    assert eventually(lambda: tv.get("a") == b"v2" and tv.get("b") == b"b1")
    tv.close()


def test_topic_stats_count_what_was_sent(client, topic):
    consumer = client.subscribe(topic, "stats")
    producer = client.create_producer(topic)
    for _ in range(5):
        producer.send(b"12345")
    stats = admin("GET", topic_path(topic) + "/stats")
    assert stats["msgInCounter"] == 5
    assert stats["subscriptions"]["stats"]["msgBacklog"] == 5
    drain(consumer, 5)
    assert eventually(lambda: admin("GET", topic_path(topic) + "/stats")["subscriptions"]["stats"]["msgBacklog"] == 0)
