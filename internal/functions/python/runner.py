"""Magnetar's runner for Python functions.

The worker starts it in the function's virtualenv as

    python magnetar_runner.py --instance-conf '<json>' --py <package> --class <module.Name>

with the same instance configuration a Go instance gets (Pulsar's GoInstanceConfig field
names), and talks to it over the InstanceControl gRPC service on the conf's "port". The user's
code is written against the official pulsar-client wheel's API: a subclass of
pulsar.Function whose process(input, context) is called per message, or a plain function
process(input). Inputs are given as str when they are valid UTF-8 and as bytes otherwise;
a str result is sent as UTF-8, bytes as they are, None sends nothing.

Processing guarantees, subscription types and EFFECTIVELY_ONCE sequence ids follow the Go
SDK (pkg/pf): see its instance.go and instance_eo.go.
"""

import argparse
import concurrent.futures
import importlib
import json
import logging
import os
import queue
import re
import signal
import struct
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
import zipfile

import grpc
import pulsar
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import empty_pb2

ATLEAST_ONCE, ATMOST_ONCE, EFFECTIVELY_ONCE, MANUAL = 0, 1, 2, 3
MAX_LATEST_EXCEPTIONS = 10

log = logging.getLogger("magnetar.function")


# ---- InstanceControl messages, described at run time (no generated code to ship)

def _messages():
    f = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="magnetar/instance_control.proto", package="proto", syntax="proto3")

    def msg(parent, name, fields):
        m = parent.add(name=name)
        for fname, num, ftype, label, tname in fields:
            fd = m.field.add(name=fname, number=num, type=ftype, label=label)
            if tname:
                fd.type_name = tname
        return m

    opt, rep = f.LABEL_OPTIONAL, f.LABEL_REPEATED
    st = msg(fdp.message_type, "FunctionStatus", [
        ("running", 1, f.TYPE_BOOL, opt, None), ("failureException", 2, f.TYPE_STRING, opt, None),
        ("numRestarts", 3, f.TYPE_INT64, opt, None), ("numReceived", 17, f.TYPE_INT64, opt, None),
        ("numSuccessfullyProcessed", 5, f.TYPE_INT64, opt, None), ("numUserExceptions", 6, f.TYPE_INT64, opt, None),
        ("latestUserExceptions", 7, f.TYPE_MESSAGE, rep, ".proto.FunctionStatus.ExceptionInformation"),
        ("numSystemExceptions", 8, f.TYPE_INT64, opt, None),
        ("latestSystemExceptions", 9, f.TYPE_MESSAGE, rep, ".proto.FunctionStatus.ExceptionInformation"),
        ("averageLatency", 12, f.TYPE_DOUBLE, opt, None), ("lastInvocationTime", 13, f.TYPE_INT64, opt, None),
        ("instanceId", 14, f.TYPE_STRING, opt, None), ("workerId", 16, f.TYPE_STRING, opt, None),
    ])
    msg(st.nested_type, "ExceptionInformation", [
        ("exceptionString", 1, f.TYPE_STRING, opt, None), ("msSinceEpoch", 2, f.TYPE_INT64, opt, None),
    ])
    md = msg(fdp.message_type, "MetricsData", [
        ("receivedTotal", 2, f.TYPE_INT64, opt, None), ("receivedTotal_1min", 10, f.TYPE_INT64, opt, None),
        ("processedSuccessfullyTotal", 4, f.TYPE_INT64, opt, None),
        ("processedSuccessfullyTotal_1min", 12, f.TYPE_INT64, opt, None),
        ("systemExceptionsTotal", 5, f.TYPE_INT64, opt, None), ("systemExceptionsTotal_1min", 13, f.TYPE_INT64, opt, None),
        ("userExceptionsTotal", 6, f.TYPE_INT64, opt, None), ("userExceptionsTotal_1min", 14, f.TYPE_INT64, opt, None),
        ("avgProcessLatency", 7, f.TYPE_DOUBLE, opt, None), ("avgProcessLatency_1min", 15, f.TYPE_DOUBLE, opt, None),
        ("lastInvocation", 8, f.TYPE_INT64, opt, None),
        ("userMetrics", 9, f.TYPE_MESSAGE, rep, ".proto.MetricsData.UserMetricsEntry"),
    ])
    entry = msg(md.nested_type, "UserMetricsEntry", [
        ("key", 1, f.TYPE_STRING, opt, None), ("value", 2, f.TYPE_DOUBLE, opt, None),
    ])
    entry.options.map_entry = True
    msg(fdp.message_type, "HealthCheckResult", [("success", 1, f.TYPE_BOOL, opt, None)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(empty_pb2.DESCRIPTOR.serialized_pb))
    pool.Add(fdp)
    get = message_factory.GetMessageClass
    return (get(pool.FindMessageTypeByName("proto.FunctionStatus")),
            get(pool.FindMessageTypeByName("proto.MetricsData")),
            get(pool.FindMessageTypeByName("proto.HealthCheckResult")))


FunctionStatus, MetricsData, HealthCheckResult = _messages()


# ---- counters

class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.total = {"received": 0, "success": 0, "user": 0, "system": 0, "lat_sum": 0.0, "lat_n": 0}
        self.window = dict(self.total)
        self.latest_user, self.latest_system = [], []
        self.last_invocation = 0
        self.user_metrics = {}
        self.failure = ""

    def add(self, name, n=1):
        with self.lock:
            self.total[name] += n
            self.window[name] += n

    def latency(self, ms):
        with self.lock:
            for d in (self.total, self.window):
                d["lat_sum"] += ms
                d["lat_n"] += 1

    def exception(self, kind, err):
        with self.lock:
            key = "user" if kind == "user" else "system"
            self.total[key] += 1
            self.window[key] += 1
            lst = self.latest_user if kind == "user" else self.latest_system
            lst.append((str(err), int(time.time() * 1000)))
            del lst[:-MAX_LATEST_EXCEPTIONS]


def _avg(d):
    return d["lat_sum"] / d["lat_n"] if d["lat_n"] else 0.0


class Control:
    """The InstanceControl service."""

    def __init__(self, inst):
        self.inst = inst

    def status(self, request, context):
        s, c = self.inst.stats, self.inst.conf
        with s.lock:
            st = FunctionStatus(
                running=self.inst.running, failureException=s.failure,
                numReceived=s.total["received"], numSuccessfullyProcessed=s.total["success"],
                numUserExceptions=s.total["user"], numSystemExceptions=s.total["system"],
                averageLatency=_avg(s.total), lastInvocationTime=s.last_invocation,
                instanceId=str(c.get("instanceID", 0)), workerId=c.get("workerId", ""))
            for text, ms in s.latest_user:
                st.latestUserExceptions.add(exceptionString=text, msSinceEpoch=ms)
            for text, ms in s.latest_system:
                st.latestSystemExceptions.add(exceptionString=text, msSinceEpoch=ms)
        return st

    def _metrics(self, reset):
        s = self.inst.stats
        with s.lock:
            t, w = s.total, s.window
            m = MetricsData(
                receivedTotal=t["received"], receivedTotal_1min=w["received"],
                processedSuccessfullyTotal=t["success"], processedSuccessfullyTotal_1min=w["success"],
                systemExceptionsTotal=t["system"], systemExceptionsTotal_1min=w["system"],
                userExceptionsTotal=t["user"], userExceptionsTotal_1min=w["user"],
                avgProcessLatency=_avg(t), avgProcessLatency_1min=_avg(w), lastInvocation=s.last_invocation)
            for k, v in s.user_metrics.items():
                m.userMetrics[k] = v
            if reset:
                s.window = {k: 0 for k in s.window}
        return m

    def health(self, request, context):
        return HealthCheckResult(success=self.inst.healthy())

    def handler(self):
        def unary(fn, resp):
            return grpc.unary_unary_rpc_method_handler(
                fn, request_deserializer=empty_pb2.Empty.FromString, response_serializer=resp.SerializeToString)
        return grpc.method_handlers_generic_handler("proto.InstanceControl", {
            "GetFunctionStatus": unary(self.status, FunctionStatus),
            "GetAndResetMetrics": unary(lambda r, c: self._metrics(True), MetricsData),
            "ResetMetrics": unary(lambda r, c: (self._metrics(True), empty_pb2.Empty())[1], empty_pb2.Empty),
            "GetMetrics": unary(lambda r, c: self._metrics(False), MetricsData),
            "HealthCheck": unary(self.health, HealthCheckResult),
        })


# ---- state over the worker's state service

class NoState(Exception):
    pass


class StateClient:
    def __init__(self, conf):
        self.base = conf.get("stateStorageServiceUrl", "")
        self.token = conf.get("stateToken", "")
        q = urllib.parse.quote
        self.prefix = "/%s/%s/%s/" % (q(conf["tenant"], safe=""), q(conf["nameSpace"], safe=""), q(conf["name"], safe=""))

    def call(self, method, key, query="", body=None):
        if not self.base:
            raise RuntimeError("state is not available (no stateStorageServiceUrl)")
        url = self.base + self.prefix + urllib.parse.quote(key, safe="") + query
        req = urllib.request.Request(url, data=body, method=method)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.read()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise NoState(key)
            raise


# ---- the pulsar.Context implementation

try:
    from pulsar import Context as _ContextBase
except ImportError:  # older wheels
    _ContextBase = object


class _Context:
    def __init__(self, inst):
        self.inst = inst
        self.msg = None

    # the record
    def get_message_id(self):
        return self.msg.message_id() if self.msg else None

    def get_message_key(self):
        return self.msg.partition_key() if self.msg else None

    def get_partition_key(self):
        return self.get_message_key()

    def get_message_eventtime(self):
        return self.msg.event_timestamp() if self.msg else None

    def get_message_properties(self):
        return self.msg.properties() if self.msg else {}

    def get_current_message_topic_name(self):
        return self.msg.topic_name() if self.msg else None

    # the function
    def get_function_name(self):
        return self.inst.conf["name"]

    def get_function_tenant(self):
        return self.inst.conf["tenant"]

    def get_function_namespace(self):
        return self.inst.conf["nameSpace"]

    def get_function_id(self):
        return self.inst.conf.get("funcID", "")

    def get_instance_id(self):
        return self.inst.conf.get("instanceID", 0)

    def get_function_version(self):
        return self.inst.conf.get("funcVersion", "")

    def get_logger(self):
        return self.inst.user_log

    def get_user_config_value(self, key):
        return self.inst.user_config.get(key)

    def get_user_config_map(self):
        return dict(self.inst.user_config)

    def get_secret(self, secret_name):
        secrets = json.loads(self.inst.conf.get("secretsMap") or "{}")
        v = secrets.get(secret_name)
        if isinstance(v, str):
            return os.environ.get(v)
        if isinstance(v, dict):
            if "env" in v:
                return os.environ.get(v["env"])
            if "path" in v:
                with open(v["path"]) as f:
                    text = f.read()
                if "key" in v:
                    return json.loads(text).get(v["key"])
                return text.rstrip("\r\n")
        return None

    def get_input_topics(self):
        return [t for t, _ in self.inst.inputs]

    def get_output_topic(self):
        return self.inst.conf.get("sinkSpecsTopic", "")

    def get_output_serde_class_name(self):
        return None

    def record_metric(self, metric_name, metric_value):
        with self.inst.stats.lock:
            self.inst.stats.user_metrics[metric_name] = float(metric_value)

    def publish(self, topic_name, message, serde_class_name=None, properties=None, compression_type=None,
                callback=None, message_conf=None):
        p = self.inst.producer_for(topic_name)
        p.send(encode(message), properties=properties or {})
        if callback:
            callback(pulsar.Result.Ok, None)

    def ack(self, msgid=None, topic=None):
        if self.msg is not None:
            self.inst.consumer_of(self.msg).acknowledge(self.msg)

    # state
    def incr_counter(self, key, amount):
        return int(self.inst.state.call("POST", key, "?incr=%d" % int(amount)))

    def get_counter(self, key):
        try:
            b = self.inst.state.call("GET", key)
        except NoState:
            return 0
        return struct.unpack(">q", b)[0] if len(b) == 8 else 0

    def del_counter(self, key):
        try:
            self.inst.state.call("DELETE", key)
        except NoState:
            pass

    def put_state(self, key, value):
        self.inst.state.call("PUT", key, body=encode(value))

    def get_state(self, key):
        try:
            return self.inst.state.call("GET", key)
        except NoState:
            return None


def new_context(inst):
    """A pulsar.Context when the wheel's abstract class is satisfied, else a plain object."""
    try:
        cls = type("Context", (_Context, _ContextBase), {}) if _ContextBase is not object else _Context
        return cls(inst)
    except TypeError:
        return _Context(inst)


def decode(b):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def encode(v):
    if v is None:
        return None
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    return str(v).encode("utf-8")


# ---- EFFECTIVELY_ONCE sequence ids: (ledger, entry, batch) in 29/21/13 bits, as pkg/pf

def sequence_id(msg_id):
    ledger, entry, batch = msg_id.ledger_id(), msg_id.entry_id(), max(msg_id.batch_index(), 0)
    if not (0 <= ledger < 1 << 29 and 0 <= entry < 1 << 21 and batch < 1 << 13):
        raise RuntimeError("EFFECTIVELY_ONCE: message id %s does not fit a sequence id" % msg_id)
    return ledger << 34 | entry << 13 | batch


class TopicLogHandler(logging.Handler):
    def __init__(self, producer, fqfn):
        super().__init__()
        self.producer, self.fqfn = producer, fqfn

    def emit(self, record):
        try:
            self.producer.send_async(self.format(record).encode("utf-8"), lambda r, m: None,
                                     properties={"fqn": self.fqfn, "loglevel": record.levelname})
        except Exception:
            pass


# ---- the instance

class Instance:
    def __init__(self, conf, fn):
        self.conf = conf
        self.fn = fn
        self.stats = Stats()
        self.state = StateClient(conf)
        self.running = False
        self.invoking_since = 0.0
        self.user_config = json.loads(conf.get("userConfig") or "{}")
        self.inputs = sorted((t, json.loads(s or "{}")) for t, s in (conf.get("sourceInputSpecs") or {}).items())
        if not self.inputs and conf.get("sourceSpecsTopic"):
            self.inputs = [(conf["sourceSpecsTopic"], {"regexPattern": conf.get("isRegexPatternSubscription", False)})]
        self.guarantee = conf.get("processingGuarantees", 0)
        self.queue = queue.Queue(maxsize=1000)
        self.consumers = {}
        self.producers = {}
        self.fatal = None
        self.user_log = log
        self.stop = threading.Event()

    def fqfn(self):
        return "%s/%s/%s" % (self.conf["tenant"], self.conf["nameSpace"], self.conf["name"])

    def healthy(self):
        timeout = self.conf.get("timeoutMs", 0)
        if not timeout or not self.invoking_since:
            return True
        return time.time() - self.invoking_since < 2 * timeout / 1000 + 10

    def producer_for(self, topic, name=None, batching=True):
        key = (topic, name)
        if key not in self.producers:
            kw = {"batching_enabled": batching}
            if name:
                kw.update(producer_name=name, send_timeout_millis=0)
            self.producers[key] = self.client.create_producer(topic, **kw)
        return self.producers[key]

    def consumer_of(self, msg):
        return self.consumers.get(msg.topic_name()) or next(iter(self.consumers.values()))

    def auto_acks(self):
        return self.guarantee in (ATLEAST_ONCE, EFFECTIVELY_ONCE)

    def run(self):
        c = self.conf
        auth = None
        if c.get("clientAuthenticationPlugin"):
            auth = pulsar.Authentication(c["clientAuthenticationPlugin"], c.get("clientAuthenticationParameters", ""))
        self.client = pulsar.Client(c["pulsarServiceURL"], authentication=auth, operation_timeout_seconds=30,
                                    logger=logging.getLogger("pulsar-client"))
        try:
            if c.get("logTopic"):
                h = TopicLogHandler(self.producer_for(c["logTopic"]), self.fqfn())
                self.user_log = logging.getLogger("magnetar.function.user")
                self.user_log.addHandler(h)
            sub_type = {0: pulsar.ConsumerType.Shared, 1: pulsar.ConsumerType.Failover,
                        2: pulsar.ConsumerType.KeyShared}.get(c.get("subscriptionType", 0), pulsar.ConsumerType.Shared)
            if self.guarantee == EFFECTIVELY_ONCE:
                sub_type = pulsar.ConsumerType.Failover
            pos = pulsar.InitialPosition.Earliest if c.get("subscriptionPosition") == 1 else pulsar.InitialPosition.Latest
            sub = c.get("subscriptionName") or self.fqfn()
            for topic, spec in self.inputs:
                kw = dict(consumer_type=sub_type, initial_position=pos, negative_ack_redelivery_delay_ms=1000,
                          message_listener=lambda consumer, msg: self.queue.put((consumer, msg)))
                if spec.get("receiverQueueSize"):
                    kw["receiver_queue_size"] = spec["receiverQueueSize"]
                retries = c.get("maxMessageRetries", 0)
                if retries > 0:
                    dlq = c.get("deadLetterTopic") or "%s-%s-DLQ" % (topic, sub.replace("/", "-"))
                    kw["dead_letter_policy"] = pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=retries, dead_letter_topic=dlq)
                target = re.compile(topic) if spec.get("regexPattern") else topic
                cons = self.client.subscribe(target, sub, **kw)
                self.consumers[topic] = cons
            if c.get("sinkSpecsTopic") and self.guarantee != EFFECTIVELY_ONCE:
                self.producer_for(c["sinkSpecsTopic"])
            self.running = True
            self.stats.failure = ""
            ctx = new_context(self)
            while not self.stop.is_set():
                if self.fatal:
                    raise RuntimeError(self.fatal)
                try:
                    consumer, msg = self.queue.get(timeout=0.2)
                except queue.Empty:
                    continue
                self.handle(ctx, consumer, msg)
        finally:
            self.running = False
            for p in self.producers.values():
                try:
                    p.flush()
                except Exception:
                    pass
            self.client.close()

    def handle(self, ctx, consumer, msg):
        self.stats.add("received")
        self.stats.last_invocation = int(time.time() * 1000)
        if self.guarantee == ATMOST_ONCE:
            consumer.acknowledge(msg)
        ctx.msg = msg
        began = time.time()
        self.invoking_since = began
        try:
            value = decode(msg.data())
            out = self.fn.process(value, ctx) if hasattr(self.fn, "process") else self.fn(value)
        except Exception as e:
            self.invoking_since = 0.0
            self.stats.exception("user", "%s: %s" % (type(e).__name__, e))
            self.user_log.warning("function failed on a record: %s", traceback.format_exc())
            if self.guarantee in (ATLEAST_ONCE, EFFECTIVELY_ONCE):
                consumer.negative_acknowledge(msg)
            return
        self.invoking_since = 0.0
        self.stats.add("success")
        self.stats.latency((time.time() - began) * 1000)
        output = self.conf.get("sinkSpecsTopic")
        payload = encode(out)
        if payload is None or not output:
            if self.auto_acks():
                consumer.acknowledge(msg)
            return

        def done(res, _msg_id):
            if res == pulsar.Result.Ok:
                if self.auto_acks():
                    consumer.acknowledge(msg)
                return
            self.stats.exception("system", "publish to %s: %s" % (output, res))
            if self.guarantee == EFFECTIVELY_ONCE:
                self.fatal = "output %s: %s" % (output, res)
            elif self.guarantee == ATLEAST_ONCE:
                consumer.negative_acknowledge(msg)

        kw = {}
        if msg.partition_key():
            kw["partition_key"] = msg.partition_key()
        if self.guarantee == EFFECTIVELY_ONCE:
            p = self.producer_for(output, name="%s-%s" % (self.fqfn(), msg.topic_name()), batching=False)
            kw["sequence_id"] = sequence_id(msg.message_id())
        else:
            p = self.producer_for(output)
        p.send_async(payload, done, **kw)


def load_function(package, class_name):
    ext = os.path.splitext(package)[1].lower()
    if ext == ".py":
        sys.path.insert(0, os.path.dirname(os.path.abspath(package)))
    elif ext == ".zip":
        sys.path.insert(0, package)
        with zipfile.ZipFile(package) as z:
            tops = {n.split("/")[0] for n in z.namelist() if "/" in n}
        for top in sorted(tops):
            sys.path.insert(0, os.path.join(package, top))
            sys.path.insert(0, os.path.join(package, top, "src"))
    module_name, _, attr = class_name.rpartition(".")
    if not module_name:
        module_name, attr = os.path.splitext(os.path.basename(package))[0], class_name
    obj = getattr(importlib.import_module(module_name), attr)
    if isinstance(obj, type):
        obj = obj()
    return obj


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--instance-conf", required=True)
    ap.add_argument("--py", required=True)
    ap.add_argument("--class", dest="class_name", required=True)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("pulsar-client").setLevel(logging.WARNING)
    conf = json.loads(args.instance_conf)
    inst = Instance(conf, load_function(args.py, args.class_name))
    server = None
    if conf.get("port"):
        server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=2))
        server.add_generic_rpc_handlers((Control(inst).handler(),))
        server.add_insecure_port("127.0.0.1:%d" % conf["port"])
        server.start()
    signal.signal(signal.SIGTERM, lambda *a: inst.stop.set())
    signal.signal(signal.SIGINT, lambda *a: inst.stop.set())
    try:
        inst.run()
    except Exception as e:
        inst.stats.failure = str(e)
        log.error("function instance failed: %s", traceback.format_exc())
        sys.exit(1)
    finally:
        if server:
            server.stop(1)


if __name__ == "__main__":
    main()
