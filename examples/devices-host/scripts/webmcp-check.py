#!/usr/bin/env python3
"""A hand check of the devices console over WebMCP (not part of the test
suite): start `cargo run -p devices-host -- --port 0` and pass its URL.

    python3 examples/devices-host/scripts/webmcp-check.py URL flag     # Chromium with --enable-features=WebMCP
    python3 examples/devices-host/scripts/webmcp-check.py URL noflag   # without: modelContext undefined, console log

It drives /usr/bin/chromium through /usr/bin/chromedriver (port 9531) as the
browser's agent would: getTools() before and after selecting dev-1 and dev-2,
executeTool(devices__disable) with deviceIds (refused), without (the page's
dialog; Approve), then with dev-locked selected (Reject), then the tools
after clearing the selection. It prints what it saw and keeps screenshots in
$OUT (default target/webmcp-check). The peer keeps its state: restart the
host before running it again.
"""
import json, os, sys, time, urllib.request, base64, subprocess
URL = sys.argv[1]
FLAG = sys.argv[2] == "flag"
OUT = os.environ.get("OUT", "target/webmcp-check")
os.makedirs(OUT, exist_ok=True)
drv = subprocess.Popen(["/usr/bin/chromedriver", "--port=9531"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1)
def req(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request("http://127.0.0.1:9531" + path, data=data, method=method, headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(r, timeout=60).read())["value"]
args = ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,900"]
if FLAG: args.append("--enable-features=WebMCP")
try:
    s = req("POST", "/session", {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}, "goog:loggingPrefs": {"browser": "ALL"}}}})
    sid = s["sessionId"]
    def js(script, *a): return req("POST", f"/session/{sid}/execute/sync", {"script": script, "args": list(a)})
    def ajs(script, *a): return req("POST", f"/session/{sid}/execute/async", {"script": script, "args": list(a)})
    def click(css):
        el = req("POST", f"/session/{sid}/element", {"using": "css selector", "value": css})
        req("POST", f"/session/{sid}/element/{list(el.values())[0]}/click", {})
    def shot(name):
        png = req("GET", f"/session/{sid}/screenshot")
        open(f"{OUT}/{name}.png", "wb").write(base64.b64decode(png))
    def wait(cond, what, t=30):
        end = time.time() + t
        while time.time() < end:
            v = js(cond)
            if v: return v
            time.sleep(0.2)
        raise SystemExit("timeout: " + what)
    req("POST", f"/session/{sid}/url", {"url": URL})
    wait("return document.querySelector('#status-dev-1') !== null", "table")
    wait("const s=document.querySelector('#agent-status'); return s && s.textContent=='Agent connected'", "host session")
    print("modelContext:", js("return typeof document.modelContext"))
    if not FLAG:
        try:
            logs = req("POST", f"/session/{sid}/se/log", {"type": "browser"})
        except Exception as e:
            logs = "unavailable: %s" % e
        print("browser console:", logs)
        sys.exit(0)
    tools = ajs("const done=arguments[arguments.length-1]; document.modelContext.getTools().then(t=>done(t.map(x=>({name:x.name,inputSchema:x.inputSchema,annotations:x.annotations}))))")
    print("tools (nothing selected):", json.dumps([t["name"] for t in tools]))
    click("#select-dev-1"); click("#select-dev-2")
    time.sleep(0.5)
    tools = ajs("const done=arguments[arguments.length-1]; document.modelContext.getTools().then(t=>done(t.map(x=>({name:x.name,inputSchema:x.inputSchema,annotations:x.annotations}))))")
    print("tools (dev-1, dev-2 selected):", json.dumps(tools))
    locked = ajs("const done=arguments[arguments.length-1]; document.modelContext.getTools().then(t=>document.modelContext.executeTool(t.find(x=>x.name=='devices__disable'), {deviceIds:['dev-3']})).then(done, e=>done('rejected '+e))")
    print("disable with deviceIds:", locked)
    js("window.__r = null; document.modelContext.getTools().then(t=>document.modelContext.executeTool(t.find(x=>x.name=='devices__disable'), {})).then(r=>window.__r=r, e=>window.__r='rejected '+e)")
    wait("return document.querySelector('#confirm-dialog') !== null", "dialog")
    print("dialog:", js("return document.querySelector('#confirm-dialog').innerText"))
    shot("webmcp-01-confirmation")
    click("#approve")
    r = wait("return window.__r", "result")
    print("approved result:", r)
    wait("return document.querySelector('#status-dev-1').textContent=='disabled'", "dev-1 disabled")
    print("statuses:", js("return ['dev-1','dev-2','dev-3'].map(i=>i+'='+document.querySelector('#status-'+i).textContent)"))
    shot("webmcp-02-result")
    # reject path on dev-3
    click("#select-dev-1"); click("#select-dev-2"); click("#select-dev-locked"); time.sleep(0.5)
    js("window.__r = null; document.modelContext.getTools().then(t=>document.modelContext.executeTool(t.find(x=>x.name=='devices__disable'), {})).then(r=>window.__r=r, e=>window.__r='rejected '+e)")
    wait("return document.querySelector('#confirm-dialog') !== null", "dialog 2")
    print("dialog 2:", js("return document.querySelector('#confirm-dialog').innerText"))
    click("#reject")
    print("rejected result:", wait("return window.__r", "result 2"))
    time.sleep(0.5)
    print("statuses:", js("return ['dev-1','dev-2','dev-3','dev-locked'].map(i=>i+'='+document.querySelector('#status-'+i).textContent)"))
    shot("webmcp-03-rejected")
    click("#select-dev-locked"); time.sleep(0.5)
    tools = ajs("const done=arguments[arguments.length-1]; document.modelContext.getTools().then(t=>done(t.map(x=>x.name)))")
    print("tools after clearing the selection:", tools)
finally:
    try: req("DELETE", f"/session/{sid}")
    except Exception: pass
    drv.terminate()
