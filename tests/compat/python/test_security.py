"""The official Python client over TLS with token authentication (issue 16): pulsar+ssl://
verified against the Go client CI configuration's CA with the host name checked, a token
from its file, and the admin REST API over https:// with tokens; and the refusals a user
would meet (no token, a forged token, a role without the permission, an unknown CA). The
runner stages the CA and tokens under /pulsar (tokens/token.txt is role token-principal,
granted produce and consume on private/auth; tokens/admin-token is the superuser admin)."""

import json
import os
import ssl
import urllib.error
import urllib.request
import uuid

import pulsar
import pytest

from conftest import RECEIVE_MS, eventually

SERVICE_URL_TLS = os.environ.get("PULSAR_SERVICE_URL_TLS", "pulsar+ssl://localhost:6651")
ADMIN_URL_TLS = os.environ.get("PULSAR_ADMIN_URL_TLS", "https://localhost:8443")
CA_FILE = os.environ.get("PULSAR_TLS_TRUST_CERTS", "/pulsar/certs/cacert.pem")
TOKEN_FILE = os.environ.get("PULSAR_TOKEN_FILE", "/pulsar/tokens/token.txt")
ADMIN_TOKEN_FILE = os.environ.get("PULSAR_ADMIN_TOKEN_FILE", "/pulsar/tokens/admin-token")


def read(path):
    with open(path) as f:
        return f.read().strip()


def tls_client(auth=None, timeout=30):
    return pulsar.Client(SERVICE_URL_TLS, authentication=auth, tls_trust_certs_file_path=CA_FILE,
                         tls_allow_insecure_connection=False, tls_validate_hostname=True,
                         operation_timeout_seconds=timeout)


def private_topic():
    return "persistent://private/auth/py-tls-" + uuid.uuid4().hex[:12]


def https_get(path, token, context):
    req = urllib.request.Request(ADMIN_URL_TLS + path, headers={"Authorization": "Bearer " + token,
                                                                 "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30, context=context) as resp:
        return resp.status, json.loads(resp.read() or b"null")


def test_produce_consume_over_tls_with_token():
    topic = private_topic()
    # The token through a supplier, read from its file at each (re)connection.
    client = tls_client(pulsar.AuthenticationToken(lambda: read(TOKEN_FILE)))
    try:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        for i in range(10):
            producer.send(("m-%d" % i).encode())
        for i in range(10):
            m = consumer.receive(timeout_millis=RECEIVE_MS)
            assert m.data() == ("m-%d" % i).encode()
            consumer.acknowledge(m)
    finally:
        client.close()


def test_tls_refuses_anonymous_and_forged_tokens():
    topic = private_topic()
    token = read(TOKEN_FILE)
    for auth in (None, pulsar.AuthenticationToken(token[:-4] + "AAAA")):
        client = tls_client(auth, timeout=10)
        try:
            with pytest.raises(pulsar.PulsarException):
                client.create_producer(topic)
        finally:
            client.close()


def test_admin_over_https_with_token():
    ctx = ssl.create_default_context(cafile=CA_FILE)
    status, tenants = https_get("/admin/v2/tenants", read(ADMIN_TOKEN_FILE), ctx)
    assert status == 200 and "private" in tenants
    # token-principal lists private/auth's topics, but the tenants are superusers' business.
    status, _ = https_get("/admin/v2/persistent/private/auth", read(TOKEN_FILE), ctx)
    assert status == 200
    with pytest.raises(urllib.error.HTTPError) as e:
        https_get("/admin/v2/tenants", read(TOKEN_FILE), ctx)
    assert e.value.code == 403
    # The system's trust store does not know the configuration's CA.
    with pytest.raises(urllib.error.URLError):
        https_get("/admin/v2/tenants", read(ADMIN_TOKEN_FILE), ssl.create_default_context())


def https_call(method, path, token, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(ADMIN_URL_TLS + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json",
                                          "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30, context=ssl.create_default_context(cafile=CA_FILE)) as resp:
        raw = resp.read()
        return json.loads(raw) if raw else None


def test_subscription_auth_mode_prefix():
    ns = "private/py-prefix-" + uuid.uuid4().hex[:8]
    topic = "persistent://%s/t" % ns
    admin_token = read(ADMIN_TOKEN_FILE)
    https_call("PUT", "/admin/v2/namespaces/" + ns, admin_token)
    https_call("POST", "/admin/v2/namespaces/%s/permissions/token-principal" % ns, admin_token, ["produce", "consume"])
    assert https_call("GET", "/admin/v2/namespaces/%s/subscriptionAuthMode" % ns, admin_token) == "None"
    https_call("POST", "/admin/v2/namespaces/%s/subscriptionAuthMode" % ns, admin_token, "Prefix")
    assert https_call("GET", "/admin/v2/namespaces/%s/subscriptionAuthMode" % ns, admin_token) == "Prefix"
    client = tls_client(pulsar.AuthenticationToken(read(TOKEN_FILE)))
    try:
        # Permissions are read through a short cache: wait (bounded) until the mode bites.
        def refused():
            try:
                client.subscribe(topic, "orders").close()
                return False
            except pulsar.AuthorizationError:
                return True
        assert eventually(refused, timeout=60)
        client.subscribe(topic, "token-principal-orders").close()
    finally:
        client.close()
