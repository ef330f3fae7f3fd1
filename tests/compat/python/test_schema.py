"""Schemas with the official Python client: what its tests/schema_test.py covers (String,
JSON and Avro records, compatibility refusals, the registry over REST)."""

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, JsonSchema, Record, String, StringSchema

from conftest import RECEIVE_MS, admin


class User(Record):
    name = String()
    age = Integer()


class Other(Record):
    title = String()


def test_string_schema(client, topic):
    consumer = client.subscribe(topic, "s", schema=StringSchema())
    producer = client.create_producer(topic, schema=StringSchema())
    producer.send("héllo")
    assert consumer.receive(timeout_millis=RECEIVE_MS).value() == "héllo"


@pytest.mark.parametrize("schema_cls", [JsonSchema, AvroSchema])
def test_record_schema_round_trip(client, topic, schema_cls):
    consumer = client.subscribe(topic, "s", schema=schema_cls(User))
    producer = client.create_producer(topic, schema=schema_cls(User))
    producer.send(User(name="ada", age=36))
    v = consumer.receive(timeout_millis=RECEIVE_MS).value()
    assert (v.name, v.age) == ("ada", 36)
    info = admin("GET", "/admin/v2/schemas/public/default/%s/schema" % topic.rsplit("/", 1)[1])
    assert info["type"] == ("JSON" if schema_cls is JsonSchema else "AVRO")


def test_incompatible_schema_is_refused(client, topic):
    client.create_producer(topic, schema=AvroSchema(User))
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(Other))


def test_schema_type_change_is_refused(client, topic):
    client.create_producer(topic, schema=StringSchema())
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=JsonSchema(User))


class UserV1(Record):
    name = String()
    age = Integer()


class UserV2(Record):
    _sorted_fields = True
    name = String()
    age = Integer(required=True)


def test_forward_evolution_to_a_record_of_another_name(client, topic):
    """The client's own test_schema_evolve: under FORWARD a record may change its name
    (Avro resolution, which Pulsar checks with, matches records by fields)."""
    ns = "/admin/v2/namespaces/public/default/schemaCompatibilityStrategy"
    before = admin("GET", ns)
    admin("PUT", ns, "FORWARD")
    try:
        p1 = client.create_producer(topic, schema=AvroSchema(UserV1))
        consumer = client.subscribe(topic, "s", schema=AvroSchema(UserV1))
        p2 = client.create_producer(topic, schema=AvroSchema(UserV2))
        p1.send(UserV1(name="one", age=1))
        p2.send(UserV2(name="two", age=2))
        got = [consumer.receive(timeout_millis=RECEIVE_MS).value() for _ in range(2)]
        assert [(u.name, u.age) for u in got] == [("one", 1), ("two", 2)]
    finally:
        admin("PUT", ns, before or "FULL")
