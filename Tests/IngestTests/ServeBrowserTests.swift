import Foundation
import Hummingbird
import NIOHTTP1
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// A page from another origin, in headless Chromium on the same machine, tries what issue 20 measured: a `no-cors`
    /// `text/plain` fetch and a `text/plain` form POST (simple requests a browser sends without asking), a preflighted
    /// JSON fetch, reading `/v1/cameras` with `fetch`, `<img>` and `<script>`. Every attempt is refused and nothing is allocated — while the very same
    /// allocation, sent by a local program as JSON, succeeds (so the page's request was a working one).
    @Test func aPageFromAnotherOriginCannotUseTheAPI() async throws {
        try await ConformanceRun.run { run in
            let serve = run.serve
            let apiPort = try #require(URL(string: serve.api)?.port)
            let options = JSON.text(["transportOptions": run.continuous(expiryTime: 3600)])
            let attack = AttackPage(api: serve.api, body: options)
            let page = try await RunningServer.start { onRunning in
                let router = Router()
                router.get("/") { _, _ in
                    Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                             body: .init(byteBuffer: ByteBuffer(string: attack.html)))
                }
                return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                                   onServerRunning: { await onRunning($0.localAddress?.port ?? 0) }, logger: .quiet)
            }
            #expect(page.port != apiPort)
            let dom = try await Chromium.dumpDOM("http://127.0.0.1:\(page.port)/", profile: run.ingest.directory.appendingPathComponent("chromium"),
                                                 budget: .seconds(8))
            await page.stop()
            // What the page saw: the preflighted request and the read are blocked by the browser (no CORS approval).
            #expect(dom.contains("cors: blocked"), "\(dom)")
            #expect(dom.contains("read: blocked"), "\(dom)")
            #expect(dom.contains("no-cors: sent"), "the simple request went out: \(dom)")
            // `<img>` and `<script>` GETs of the API: nothing loads (JSON with nosniff is neither a picture nor a script).
            #expect(dom.contains("img: error") && dom.contains("script: error"), "\(dom)")
            // What the server did: nothing allocated; the attempts that reached it were refused for their Origin.
            #expect(try await run.command("findTransport", [:]) == "NOT_FOUND", "a page allocated a transport")
            let refused = serve.process.output.split(separator: "\n").filter { $0.contains("API request refused by the cross-site request rules") }
            #expect(refused.contains { $0.contains("foreignOrigin") && $0.contains("allocatePushTransport") },
                    "\(serve.process.output.suffix(3000))")

            // The same request from a local program: refused as text/plain, allocated as JSON.
            let (plain, plainText) = try await serve.request(.POST, "/v1/cameras/cam1/commands/allocatePushTransport", options,
                                                             headers: [("Content-Type", "text/plain")])
            #expect(plain == 415, "\(plainText)")
            #expect(try await run.command("allocatePushTransport", ["transportOptions": run.continuous(expiryTime: 3600)]) == "SUCCESS")
        }
    }

    /// DNS rebinding: a page on attacker.example re-pointed at 127.0.0.1 sends `Host: attacker.example`; it reads nothing.
    @Test func aRebindingHostIsRefused() async throws {
        try await ConformanceRun.run { run in
            let port = try #require(URL(string: run.serve.api)?.port)
            let (status, text) = try await run.serve.request(.GET, "/v1/cameras", headers: [("Host", "attacker.example:\(port)")])
            #expect(status == 421, "\(text)")
            #expect(!text.contains("cam1"), "\(text)")
            let (own, _) = try await run.serve.request(.GET, "/v1/cameras", headers: [("Host", "localhost:\(port)")])
            #expect(own == 200)
            // Counted by the rule that refused it.
            let (_, metrics) = try await run.serve.request(.GET, "/metrics")
            #expect(metrics.contains(#"pushav_api_requests_refused_total{reason="host"} 1"#), "\(metrics)")
        }
    }
}

/// The attacker's page: its script writes what each attempt got into the DOM, which the test reads.
struct AttackPage {
    let api: String
    let body: String

    var html: String {
        let target = api + "/v1/cameras/cam1/commands/allocatePushTransport"
        let bodyLiteral = String(decoding: (try? JSONSerialization.data(withJSONObject: [body], options: [.fragmentsAllowed])) ?? Data(), as: UTF8.self)
        return """
            <!doctype html><html><head><title>attack</title></head><body>
            <pre id="log"></pre>
            <iframe name="sink" style="display:none"></iframe>
            <form id="form" method="POST" action="\(target)" enctype="text/plain" target="sink">
              <input type="hidden" name="x" value="y">
            </form>
            <script>
            const log = (line) => { document.getElementById("log").textContent += line + "\\n"; };
            const body = \(bodyLiteral)[0];
            fetch("\(target)", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body})
              .then(() => log("no-cors: sent"), (e) => log("no-cors: failed " + e));
            fetch("\(target)", {method: "POST", headers: {"Content-Type": "application/json"}, body})
              .then((r) => log("cors: answered " + r.status), () => log("cors: blocked"));
            fetch("\(api)/v1/cameras").then((r) => r.text()).then((t) => log("read: " + t.length), () => log("read: blocked"));
            const img = new Image();
            img.onload = () => log("img: loaded " + img.width);
            img.onerror = () => log("img: error");
            img.src = "\(api)/v1/cameras";
            const script = document.createElement("script");
            script.onload = () => log("script: loaded");
            script.onerror = () => log("script: error");
            script.src = "\(api)/v1/cameras";
            document.body.appendChild(script);
            document.getElementById("form").submit();
            </script></body></html>
            """
    }
}
