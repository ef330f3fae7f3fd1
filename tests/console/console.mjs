// The console's browser test: playwright-core driving Debian's chromium against a running
// standalone that console_test.go started and filled with data. Every page must render with
// that live data, a cursor reset and a message search must work end to end, and each page's
// screenshot is written to SHOTS (docs/console/ when run by `make console-test`). With
// AUTH_BASE (a standalone with token authentication and authorization), ADMIN_TOKEN (a
// superuser's), READER_TOKEN (a role that may only consume public/default) and FORGED_TOKEN
// (signed with another key), the login, the refusal of bad tokens and the role-aware pages
// are checked too.
//
//   BASE=http://127.0.0.1:8080 SHOTS=docs/console READONLY_BASE=... node tests/console/console.mjs
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const base = process.env.BASE;
const shots = process.env.SHOTS;
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const topic = "persistent://public/default/orders";
mkdirSync(shots, { recursive: true });

const browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox", "--disable-gpu"] });
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
page.setDefaultTimeout(60000);
const errors = [];
page.on("pageerror", (e) => errors.push(e.message));
// cspErrors counts what the console's Content-Security-Policy blocked (an inline style or
// script the page then silently lacks): chromium reports each as a console error.
const cspErrors = (m) => { if (m.type() === "error" && /Content Security Policy/.test(m.text())) errors.push("CSP: " + m.text()); };
page.on("console", cspErrors);
// drawnNull fails a page that shows "null" (an optional part drawn as text).
const drawnNull = async (p, name) => assert.ok(!(await p.locator("main").innerText()).split("\n").some((l) => l.trim() === "null"), `"null" drawn on ${name}`);
const shot = async (name) => {
  await drawnNull(page, name);
  await page.screenshot({ path: join(shots, name + ".png"), fullPage: true });
};
const stats = async () => (await fetch(`${base}/admin/v2/persistent/public/default/orders/stats`)).json();
const step = (name) => console.log("- " + name);

step("overview: brokers, bookies, rates");
await page.goto(`${base}/ui/`);
await page.getByRole("heading", { name: "Cluster standalone" }).waitFor();
await page.locator("td", { hasText: "writable" }).first().waitFor();
await shot("overview");

step("tenants and namespaces");
await page.goto(`${base}/ui/#/tenants`);
await page.getByRole("link", { name: "public/default" }).waitFor();
await shot("tenants");

step("namespace: topics with search and sorting, policies");
await page.goto(`${base}/ui/#/ns/public/default`);
await page.getByRole("link", { name: "orders" }).waitFor();
await page.getByRole("link", { name: "events" }).waitFor(); // the partitioned topic, once
assert.equal(await page.getByRole("link", { name: /events-partition-/ }).count(), 0, "partitions listed beside their topic");
await page.locator("th", { hasText: "backlog" }).click();
await page.fill("#topic-search", "ord");
assert.equal(await page.getByRole("link", { name: "events" }).count(), 0, "search did not filter");
await page.getByRole("link", { name: "orders" }).waitFor();
await page.fill("#topic-search", "");
await shot("namespace");
await page.fill("#retention-minutes", "120");
await page.fill("#retention-mb", "64");
await page.getByRole("button", { name: "Save retention" }).click();
await page.getByText("retention saved").waitFor();
const ret = await (await fetch(`${base}/admin/v2/namespaces/public/default/retention`)).json();
assert.equal(ret.retentionTimeInMinutes, 120);
assert.equal(ret.retentionSizeInMB, 64);

step("topic: rates, partitions, storage, producers, schema");
await page.goto(`${base}/ui/#/topic/persistent/public/default/orders`);
await page.getByText("messages in").waitFor();
await page.locator(".card", { hasText: "messages in" }).getByText("20").waitFor();
await shot("topic");
await page.goto(`${base}/ui/#/topic/persistent/public/default/events`);
await page.getByText("3 partitions").waitFor();
await page.getByRole("link", { name: "events-partition-2" }).waitFor();
await shot("partitioned-topic");
await page.goto(`${base}/ui/#/topic/persistent/public/default/orders/storage`);
await page.getByRole("heading", { name: "Ledgers" }).waitFor();
await page.locator("table").first().locator("tbody tr").first().waitFor();
await shot("storage");
await page.goto(`${base}/ui/#/topic/persistent/public/default/orders/producers`);
await page.getByText("orders-producer").waitFor();
await shot("producers");
await page.goto(`${base}/ui/#/topic/persistent/public/default/orders/schema`);
await page.getByText("JSON").first().waitFor();
await shot("schema");

step("subscriptions: reset the cursor by time, with a confirmation");
await page.goto(`${base}/ui/#/topic/persistent/public/default/orders/subscriptions`);
await page.getByRole("cell", { name: "billing" }).waitFor();
let st = await stats();
assert.equal(st.subscriptions.billing.msgBacklog, 15, "seeded backlog");
await shot("subscriptions");
const row = page.locator("tr", { hasText: "billing" });
await row.locator("input.reset-time").fill("2000-01-01T00:00");
await row.locator("button.reset-by-time").click();
await page.getByRole("dialog").getByText("Reset billing to 2000-01-01T00:00?").waitFor();
await shot("confirm");
await page.locator("#confirm").click();
await page.getByRole("dialog").waitFor({ state: "hidden" });
for (let i = 0; i < 50 && (st = await stats()).subscriptions.billing.msgBacklog !== 20; i++) await page.waitForTimeout(200);
assert.equal(st.subscriptions.billing.msgBacklog, 20, "reset to the start did not bring the acknowledged messages back");

step("message browser: peek, find by id, search by key");
await page.goto(`${base}/ui/#/topic/persistent/public/default/orders/messages`);
await page.locator("#peek").click();
await page.locator(".message").first().waitFor();
assert.equal(await page.locator(".message").count(), 10);
await page.locator(".payload", { hasText: '"order": 0' }).waitFor(); // JSON decoded by the schema
await page.fill("#find-key", "key-17");
await page.locator("#find-by-key").click();
await page.getByText('messages with key "key-17"').waitFor();
assert.equal(await page.locator(".message").count(), 1);
await page.locator(".payload", { hasText: '"order": 17' }).waitFor();
await shot("messages");
const id = (await page.locator(".message b").first().textContent()).trim();
await page.fill("#find-id", id);
await page.locator("#find-by-id").click();
await page.locator(".message b", { hasText: id }).waitFor();

step("message browser: produce a message (REST producer, the topic's JSON schema)");
await page.fill("#produce-key", "from-console");
await page.fill("#produce-payload", '{"order": 4242}');
await page.locator("#produce").click();
await page.getByText(/^produced \d+:\d+:-1$/).waitFor();
const produced = (await page.locator("#browse-status").textContent()).replace("produced ", "").split(":");
await page.fill("#find-id", `${produced[0]}:${produced[1]}`);
await page.locator("#find-by-id").click();
await page.locator(".payload", { hasText: '"order": 4242' }).waitFor();
await page.getByText("key from-console").waitFor();

step("functions, sources and sinks");
await page.goto(`${base}/ui/#/functions`);
await page.getByRole("heading", { name: "Functions, sources and sinks" }).waitFor();
await shot("functions");

step("Kafka consumer groups (the front end is not wired into the standalone yet: the empty state)");
await page.goto(`${base}/ui/#/kafka`);
await page.getByRole("heading", { name: "Kafka consumer groups" }).waitFor();
await page.locator("#no-kafka-groups, table").first().waitFor();
await shot("kafka-groups");

if (process.env.READONLY_BASE) {
  step("read-only mode: no button that changes anything");
  await page.goto(`${process.env.READONLY_BASE}/ui/#/topic/persistent/public/default/orders/subscriptions`);
  await page.getByRole("cell", { name: "billing" }).waitFor();
  await page.getByText("read-only").first().waitFor();
  for (const b of ["Reset to time", "Clear backlog", "Delete", "Skip"]) {
    assert.equal(await page.getByRole("button", { name: b }).count(), 0, `read-only console shows "${b}"`);
  }
  await page.goto(`${process.env.READONLY_BASE}/ui/#/topic/persistent/public/default/orders/messages`);
  await page.locator("#peek").waitFor();
  assert.equal(await page.locator("#produce").count(), 0, "read-only console shows Produce");
  await page.goto(`${process.env.READONLY_BASE}/ui/#/ns/public/default`);
  await page.getByRole("link", { name: "orders" }).waitFor();
  assert.equal(await page.getByRole("button", { name: "Save retention" }).count(), 0);
  await shot("read-only");
}

if (process.env.AUTH_BASE) {
  // A standalone with token authentication and authorization: "admin" is a superuser,
  // "reader" may only consume public/default. Each login is a fresh tab (sessionStorage).
  const ab = process.env.AUTH_BASE;
  const tab = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  tab.setDefaultTimeout(60000);
  tab.on("pageerror", (e) => errors.push(e.message));
  tab.on("console", cspErrors);
  const tshot = async (name) => {
    await drawnNull(tab, name);
    await tab.screenshot({ path: join(shots, name + ".png"), fullPage: true });
  };
  const login = async (token) => {
    await tab.fill("#token", token);
    await tab.locator("#login").click();
  };
  const authStats = async () => (await fetch(`${ab}/admin/v2/persistent/public/default/orders/stats`,
    { headers: { Authorization: `Bearer ${process.env.ADMIN_TOKEN}` } })).json();
  // noErrors: the page shows no refused request (a 403 drawn as an error).
  const noErrors = async (where) => assert.equal(await tab.locator("main p.bad:not(:empty)").count(), 0, `an error on ${where}`);

  try {
    step("authentication on: the login page; a wrong token and a forged one are refused with the reason");
    await tab.goto(`${ab}/ui/`);
    await tab.getByRole("heading", { name: "Log in" }).waitFor();
    assert.equal(await tab.locator("#login-error").count(), 0, "an error before any token was given");
    // A refusal drops the token and draws the reason.
    const refused = async (token) => {
      await login(token);
      await tab.waitForFunction(() => sessionStorage.getItem("magnetar.token") === null && document.getElementById("login-error"));
      assert.match(await tab.locator("#login-error").textContent(), /^That token was not accepted: \S/);
    };
    await refused("not-a-token");
    await refused(process.env.FORGED_TOKEN);
    await tshot("login");

    step("superuser token: brokers, bookies, tenants, every button, and an action that needs the token");
    await login(process.env.ADMIN_TOKEN);
    await tab.getByRole("heading", { name: "Cluster standalone" }).waitFor();
    await tab.locator("td", { hasText: "writable" }).first().waitFor();
    await tab.locator("#role", { hasText: "admin" }).waitFor();
    await tab.locator("#rights", { hasText: "superuser" }).waitFor();
    await noErrors("the superuser's overview");
    await tab.goto(`${ab}/ui/#/tenants`);
    await tab.getByRole("link", { name: "public/default" }).waitFor();
    await tab.goto(`${ab}/ui/#/ns/public/default`);
    await tab.getByRole("link", { name: "orders" }).waitFor();
    await tab.getByRole("button", { name: "Save retention" }).waitFor();
    await tab.goto(`${ab}/ui/#/topic/persistent/public/default/orders/subscriptions`);
    await tab.getByRole("cell", { name: "billing" }).waitFor();
    for (const b of ["Reset to time", "Reset to id", "Skip", "Clear backlog", "Delete"]) {
      assert.equal(await tab.getByRole("button", { name: b, exact: true }).count(), 1, `the superuser lacks "${b}"`);
    }
    let ast = await authStats();
    assert.equal(ast.subscriptions.billing.msgBacklog, 15, "seeded backlog");
    await tab.locator("tr", { hasText: "billing" }).locator("input.skip-n").fill("3");
    await tab.getByRole("button", { name: "Skip", exact: true }).click();
    await tab.getByRole("dialog").getByText("Skip 3 messages on billing?").waitFor();
    await tab.locator("#confirm").click();
    await tab.getByRole("dialog").waitFor({ state: "hidden" });
    for (let i = 0; i < 50 && (ast = await authStats()).subscriptions.billing.msgBacklog !== 12; i++) await tab.waitForTimeout(200);
    assert.equal(ast.subscriptions.billing.msgBacklog, 12, "skipping 3 through the console with the token");
    await tab.goto(`${ab}/ui/#/topic/persistent/public/default/orders/messages`);
    await tab.locator("#produce").waitFor();
    await tab.locator("#logout").click();
    await tab.getByRole("heading", { name: "Log in" }).waitFor();
    assert.equal(await tab.locator("#login-error").count(), 0, "logging out is not a refusal");

    step("a consume-only role: its namespace's pages with data, no button it cannot use");
    await login(process.env.READER_TOKEN);
    await tab.getByRole("heading", { name: "Cluster standalone" }).waitFor();
    await tab.locator("#role", { hasText: "reader" }).waitFor();
    await tab.locator("#rights", { hasText: "no admin rights" }).waitFor();
    await tab.locator("#superusers-only").waitFor();
    assert.equal(await tab.locator("td", { hasText: "writable" }).count(), 0, "bookies shown to a non-superuser");
    await noErrors("the reader's overview");
    await tab.goto(`${ab}/ui/#/tenants`);
    await tab.locator("#open-ns").fill("public/default");
    await tab.locator("#open-ns-go").click();
    await tab.getByRole("link", { name: "orders" }).waitFor();
    await tab.getByRole("link", { name: "events" }).waitFor();
    await tab.locator("#policies-hidden").waitFor();
    assert.equal(await tab.getByRole("button", { name: "Save retention" }).count(), 0, "the reader sees Save retention");
    assert.equal(await tab.getByRole("button", { name: "Save TTL" }).count(), 0, "the reader sees Save TTL");
    await noErrors("the reader's namespace");
    await tshot("limited-role");
    await tab.goto(`${ab}/ui/#/topic/persistent/public/default/orders`);
    await tab.locator(".card", { hasText: "messages in" }).getByText("20").waitFor();
    await noErrors("the reader's topic");
    await tab.goto(`${ab}/ui/#/topic/persistent/public/default/orders/subscriptions`);
    await tab.getByRole("cell", { name: "billing" }).waitFor();
    await tab.locator("tr", { hasText: "billing" }).getByText("read only").waitFor();
    for (const b of ["Reset to time", "Reset to id", "Skip", "Clear backlog", "Delete"]) {
      assert.equal(await tab.getByRole("button", { name: b, exact: true }).count(), 0, `the reader sees "${b}"`);
    }
    await tab.goto(`${ab}/ui/#/topic/persistent/public/default/orders/messages`);
    await tab.locator("#peek").click();
    await tab.locator(".message").first().waitFor();
    assert.equal(await tab.locator(".message").count(), 10, "peek as the reader (10 of the 12 left after the skip)");
    assert.equal(await tab.locator("#produce").count(), 0, "the reader sees Produce");
    await tab.goto(`${ab}/ui/#/topic/persistent/public/default/orders/storage`);
    await tab.getByRole("heading", { name: "Ledgers" }).waitFor();
    await noErrors("the reader's storage tab");
    await tab.goto(`${ab}/ui/#/tenants`);
    await tab.getByRole("link", { name: "public/default" }).waitFor(); // opened in this session
    await tab.goto(`${ab}/ui/#/functions`);
    await tab.getByRole("heading", { name: "Functions, sources and sinks" }).waitFor();
    await noErrors("the reader's functions page");
  } catch (e) {
    // What the page showed when a step failed.
    console.log(`at ${tab.url()}:\n${await tab.locator("body").innerText().catch(() => "?")}\npage errors: ${errors.join("; ")}`);
    throw e;
  }
}

assert.deepEqual(errors, [], "errors in the page");
await browser.close();
console.log("console: every page and action checked");
