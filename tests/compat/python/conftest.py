"""Fixtures for the Python compatibility module (make compat: tests/compat/runner, suite
"python"). The runner starts magnetar standalone inside a private network namespace on the
default ports; PULSAR_SERVICE_URL / PULSAR_ADMIN_URL point elsewhere when run by hand."""

import json
import os
import time
import urllib.error
import urllib.request
import uuid

import pulsar
import pytest

SERVICE_URL = os.environ.get("PULSAR_SERVICE_URL", "pulsar://localhost:6650")
ADMIN_URL = os.environ.get("PULSAR_ADMIN_URL", "http://localhost:8080")

# Generous bounds that only catch hangs (the machine is shared and loaded).
RECEIVE_MS = 30000


@pytest.fixture
def client():
    c = pulsar.Client(SERVICE_URL, operation_timeout_seconds=30)
    yield c
    c.close()


@pytest.fixture
def topic():
    return "persistent://public/default/py-compat-" + uuid.uuid4().hex[:12]


def admin(method, path, body=None):
    """One admin REST call; returns the decoded JSON answer (or None)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(ADMIN_URL + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read()
        return json.loads(raw) if raw else None


def topic_path(topic):
    return "/admin/v2/" + topic.replace("://", "/")


def eventually(cond, timeout=30.0):
    """Waits for cond() to be true; a bound that only catches hangs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()
