import Foundation
import KindlyPush
import KindlyPushBase
import KindlyPushCLI
import KindlyPushCLISend
import KindlyPushSend
import Testing

/// `kindly-push send` against the APNs test server (tools/apns/apns_test_server.py), each test
/// with a server of its own.
@Suite("kindly-push send (APNs over HTTP/2)", .offThePool)
struct SendTests {
    static func lines(_ output: CLI.Output) -> [[String: Any]] {
        output.stdout.split(separator: "\n").map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
    }

    /// The answered records (status not null) of `token`.
    static func answered(_ records: [[String: Any]], _ token: String) -> [[String: Any]] {
        records.filter { $0["token"] as? String == token && $0["status"] is Int }
    }

    /// Every result line is what the server recorded for its token: the status, the reason and
    /// the apns-id of one of its answers (the last one, unless a resend was answered twice).
    static func expectResultsMatch(_ results: [[String: Any]], _ records: [[String: Any]]) {
        for result in results {
            guard let token = result["token"] as? String, let status = result["status"] as? Int else { continue }
            let answers = answered(records, token).filter { $0["status"] as? Int == status }
            #expect(!answers.isEmpty, "no answer \(status) recorded for \(token)")
            let ids = answers.compactMap { $0["apns_id"] as? String }
            #expect(ids.contains(result["apns_id"] as? String ?? "-"), "the apns_id of \(token) is none the server gave")
            if status != 200 { #expect(answers.contains { $0["reason"] as? String == result["reason"] as? String }) }
        }
    }

    @Test("every status: 200, and 400/403/410/413/429/500/503 with APNs's reason; results in input order, equal to the server's record")
    func everyStatus() throws {
        let refused = [
            (400, "BadDeviceToken"), (403, "InvalidProviderToken"), (410, "Unregistered"), (413, "PayloadTooLarge"),
            (429, "TooManyRequests"), (500, "InternalServerError"), (503, "ServiceUnavailable"),
        ]
        var answers: [String: Any] = [:]
        // Tokens 1000+: refused (429/500/503 five times, so that the last answer stands);
        // tokens 2000+: 429, 500, 503 twice, then 200 (retried with backoff).
        for (index, (status, reason)) in refused.enumerated() {
            let times = [429, 500, 503].contains(status) ? 5 : 1
            answers[APNsTestServer.token(1000 + index)] = Array(repeating: ["status": status, "reason": reason], count: times)
        }
        for (index, status) in [429, 500, 503].enumerated() {
            answers[APNsTestServer.token(2000 + index)] = Array(repeating: ["status": status], count: 2)
        }
        let server = try APNsTestServer(script: ["answers": answers])
        var tokens = (0..<200).map(APNsTestServer.token)
        tokens.insert(contentsOf: refused.indices.map { APNsTestServer.token(1000 + $0) }, at: 50)
        tokens.insert(contentsOf: (0..<3).map { APNsTestServer.token(2000 + $0) }, at: 120)
        let output = try server.send(["--jsonl"], stdin: tokens.map { APNsTestServer.line($0) + "\n" }.joined())
        #expect(output.status == 0)
        #expect(output.stderr == "")
        let results = Self.lines(output)
        try #require(results.count == tokens.count)
        #expect(results.map { $0["token"] as? String } == tokens)
        for (index, (status, reason)) in refused.enumerated() {
            let result = results[50 + index]
            #expect(result["status"] as? Int == status)
            #expect(result["reason"] as? String == reason)
            #expect((result["unregistered_at"] != nil) == (status == 410))
        }
        for index in 0..<3 {
            #expect(results[120 + index]["status"] as? Int == 200)
            #expect(Self.answered(try server.records(), tokens[120 + index]).count == 3)
        }
        let accepted = results.filter { $0["status"] as? Int == 200 }
        #expect(accepted.count == 203)
        #expect(accepted.allSatisfy { $0["reason"] == nil && ($0["apns_id"] as? String)?.isEmpty == false })
        let records = try server.records()
        Self.expectResultsMatch(results, records)
        // One connection; the first request alone, then several streams at once, never more
        // than the server's limit.
        #expect(Set(records.compactMap { $0["connection"] as? Int }) == [1])
        #expect(records.first?["open_streams"] as? Int == 1)
        let open = records.compactMap { $0["open_streams"] as? Int }
        #expect(open.max() ?? 0 > 1)
        #expect(zip(open, records.compactMap { $0["limit"] as? Int }).allSatisfy { $0 <= max($1, 1) })
        #expect(!records.contains { $0["protocol_error"] != nil || $0["refused"] != nil })
    }

    @Test("the headers come from the push: alert/10 or background/5, apns-topic, apns-expiration, apns-collapse-id")
    func derivedHeaders() throws {
        let clock = 1_800_000_000
        let server = try APNsTestServer(clock: clock)
        let silent = #"{"aps":{"content-available":1},"kindly":{"v":1}}"#
        let input = [
            APNsTestServer.line(APNsTestServer.token(1)), APNsTestServer.line(APNsTestServer.token(2), push: silent),
            APNsTestServer.line(APNsTestServer.token(3), extra: #","collapse_id":"chat-7f3a""#),
        ].map { $0 + "\n" }.joined()
        let output = try server.send(["--jsonl", "--expiration", "3600"], stdin: input)
        #expect(output.status == 0)
        #expect(Self.lines(output).map { $0["status"] as? Int } == [200, 200, 200])
        let records = try server.records()
        func headers(_ number: Int) -> [String: String] {
            Self.answered(records, APNsTestServer.token(number)).first?["headers"] as? [String: String] ?? [:]
        }
        #expect(headers(1)["apns-push-type"] == "alert")
        #expect(headers(1)["apns-priority"] == "10")
        #expect(headers(2)["apns-push-type"] == "background")
        #expect(headers(2)["apns-priority"] == "5")
        #expect(headers(1)["apns-collapse-id"] == nil)
        #expect(headers(3)["apns-collapse-id"] == "chat-7f3a")
        for number in 1...3 {
            #expect(headers(number)["apns-topic"] == APNsTestServer.topic)
            #expect(headers(number)["apns-expiration"] == "\(clock + 3600)")
        }
        #expect(Self.answered(records, APNsTestServer.token(2)).first?["payload"] as? String == silent)
    }

    @Test(
        "a bad line is that line's error and is not sent: not JSON, no token, a push over 4096 bytes, a bad collapse id, over 64 KiB, cut short"
    )
    func badLines() throws {
        let server = try APNsTestServer()
        let big = #"{"aps":{"alert":"x"},"pad":""# + String(repeating: "a", count: 4100) + #""}"#
        let input = [
            "not json", #"{"push":{"aps":{}}}"#, APNsTestServer.line(APNsTestServer.token(3), push: big),
            APNsTestServer.line(APNsTestServer.token(4), extra: #","collapse_id":"\#(String(repeating: "c", count: 65))""#),
            #"{"token":"xyz","push":{}}"#, APNsTestServer.line(APNsTestServer.token(6)),
            // The line engine's own errors, as in every stream: over 64 KiB, and a document its newline cuts short.
            String(repeating: " ", count: 70_000), #"{"token":"#,
        ].map { $0 + "\n" }.joined()
        let output = try server.send(["--jsonl"], stdin: input)
        #expect(output.status == 0)
        let results = Self.lines(output)
        try #require(results.count == 8)
        #expect((results[6]["error"] as? [String: Any])?["message"] as? String == "the line is over 64 KiB")
        #expect((results[7]["error"] as? [String: Any])?["message"] as? String == PushStreamResult.spreadDocumentAdvice)
        for index in 0..<5 {
            #expect((results[index]["error"] as? [String: Any])?["code"] as? String == "bad_input")
        }
        #expect(results[2]["token"] as? String == APNsTestServer.token(3))
        #expect(((results[2]["error"] as? [String: Any])?["message"] as? String)?.contains("over APNs's 4096") == true)
        #expect(results[5]["status"] as? Int == 200)
        #expect(try server.records().map { $0["token"] as? String } == [APNsTestServer.token(6)])
    }

    @Test("the provider token is renewed after 50 minutes of the test clock, not before 20, and once on 403 ExpiredProviderToken")
    func tokenRefresh() throws {
        let start = 1_800_000_000
        let server = try APNsTestServer(
            script: ["answers": [APNsTestServer.token(4): [["status": 403, "reason": "ExpiredProviderToken"]]]], clock: start)
        let run = try RunningCLI(server.sendArguments(["--jsonl"]), environment: server.environment)
        func send(_ number: Int, at minutes: Int) throws -> [String: Any] {
            try server.setClock(start + minutes * 60)
            let before = run.stdout.split(separator: "\n").count
            run.write(APNsTestServer.line(APNsTestServer.token(number)) + "\n")
            #expect(run.waitUntil { run.stdout.split(separator: "\n").count > before })
            let last = run.stdout.split(separator: "\n").last.map(String.init) ?? ""
            return (try? JSONSerialization.jsonObject(with: Data(last.utf8))) as? [String: Any] ?? [:]
        }
        #expect(try send(1, at: 0)["status"] as? Int == 200)
        #expect(try send(2, at: 19)["status"] as? Int == 200)
        #expect(try send(3, at: 51)["status"] as? Int == 200)
        // 25 minutes after the last renewal, APNs calls the token expired: renewed, sent again.
        #expect(try send(4, at: 76)["status"] as? Int == 200)
        run.closeInput()
        #expect(run.finish() == 0)
        let records = try server.records()
        func issued(_ number: Int) -> [Int] { Self.answered(records, APNsTestServer.token(number)).compactMap(APNsTestServer.issuedAt) }
        #expect(issued(1) == [start])
        #expect(issued(2) == [start])
        #expect(issued(3) == [start + 51 * 60])
        #expect(issued(4) == [start + 51 * 60, start + 76 * 60])
        #expect(!records.contains { $0["reason"] as? String == "TooManyProviderTokenUpdates" })
    }

    @Test("a status APNs never answers with (a 3xx, a 600, a 502) is tried again as a 503 is, and a worker holds it as one, counted")
    func statusesOutsideAPNs() throws {
        var answers: [String: Any] = [:]
        for (index, status) in [302, 600, 502].enumerated() {
            answers[APNsTestServer.token(3000 + index)] = Array(repeating: ["status": status], count: 2)
            answers[APNsTestServer.token(4000 + index)] = Array(repeating: ["status": status], count: 5)
        }
        let server = try APNsTestServer(script: ["answers": answers])
        let tokens = (0..<3).map { APNsTestServer.token(3000 + $0) } + (0..<3).map { APNsTestServer.token(4000 + $0) }
        let output = try server.send(["--jsonl"], stdin: tokens.map { APNsTestServer.line($0) + "\n" }.joined())
        #expect(output.status == 0, "\(output.stderr)")
        let results = Self.lines(output)
        try #require(results.count == 6)
        // Twice, then 200: tried again. Five times: the last answer stands, after five attempts.
        #expect(results.prefix(3).allSatisfy { $0["status"] as? Int == 200 }, "\(results)")
        #expect(results.suffix(3).map { $0["status"] as? Int } == [302, 600, 502], "\(results)")
        let records = try server.records()
        for token in tokens.suffix(3) { #expect(Self.answered(records, token).count == 5, "\(token)") }
        // What a send worker does with such a line: holds the entry, each round a delivery.
        for status in [302, 600, 502] {
            #expect {
                try PushSendProcessor.check(.answered(status: status, reason: nil, retryAfter: nil), deadLetters: true)
            } throws: { error in
                guard let error = error as? CodedError else { return false }
                return error.isTransient && error.countsAsDelivery
            }
        }
    }

    @Test("403 ExpiredProviderToken for every push: the token is renewed at most once in 20 minutes, and the pushes keep their 403")
    func expiredTokenEveryPush() throws {
        let start = 1_800_000_000
        // A host whose clock is off: APNs calls every token expired.
        var answers: [String: Any] = [:]
        for number in 1...21 { answers[APNsTestServer.token(number)] = [["status": 403, "reason": "ExpiredProviderToken"]] }
        let server = try APNsTestServer(script: ["answers": answers], clock: start)
        let run = try RunningCLI(server.sendArguments(["--jsonl"]), environment: server.environment)
        func send(_ numbers: ClosedRange<Int>, at minutes: Int) throws -> [[String: Any]] {
            try server.setClock(start + minutes * 60)
            let before = run.stdout.split(separator: "\n").count
            run.write(numbers.map { APNsTestServer.line(APNsTestServer.token($0)) + "\n" }.joined())
            #expect(run.waitUntil { run.stdout.split(separator: "\n").count >= before + numbers.count })
            return run.stdout.split(separator: "\n").dropFirst(before).map {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
            }
        }
        // Twenty pushes in the token's first minute: none renews it; each keeps its 403.
        let early = try send(1...20, at: 1)
        #expect(early.count == 20)
        #expect(early.allSatisfy { $0["status"] as? Int == 403 && $0["reason"] as? String == "ExpiredProviderToken" }, "\(early)")
        // Twenty-one minutes in: renewed once, and the push sent again with the new token.
        let late = try send(21...21, at: 21)
        #expect(late.first?["status"] as? Int == 200, "\(late)")
        run.closeInput()
        #expect(run.finish() == 0)
        let records = try server.records()
        // The first token is made for the first push (minute 1), the second twenty minutes later.
        #expect(Set(records.compactMap(APNsTestServer.issuedAt)) == [start + 60, start + 21 * 60])
        #expect(!records.contains { $0["reason"] as? String == "TooManyProviderTokenUpdates" })
    }

    @Test(
        "a GOAWAY mid-run, and a dropped connection: reconnected, what was in flight sent again, every push answered 200",
        arguments: ["goaway_after", "drop_after"])
    func connectionFaults(_ fault: String) throws {
        let server = try APNsTestServer(script: [fault: 150, "delay_ms": 20])
        let tokens = (0..<600).map(APNsTestServer.token)
        let output = try server.send(["--jsonl"], stdin: tokens.map { APNsTestServer.line($0) + "\n" }.joined())
        #expect(output.status == 0)
        let results = Self.lines(output)
        #expect(results.map { $0["token"] as? String } == tokens)
        #expect(results.allSatisfy { $0["status"] as? Int == 200 })
        let records = try server.records()
        #expect(Set(records.compactMap { $0["connection"] as? Int }).count >= 2)
        #expect(records.contains { $0["status"] is NSNull })
        // The next connection multiplexes again once it has answered its first stream (a client
        // that kept its resends to one stream at a time would pass every check above).
        let later = records.filter { ($0["connection"] as? Int ?? 1) > 1 && $0["status"] is Int }
        let multiplexed = later.filter { ($0["open_streams"] as? Int ?? 0) > 1 }
        #expect(multiplexed.count * 2 > later.count, "\(multiplexed.count) of \(later.count) answers after the fault shared the connection")
        Self.expectResultsMatch(results, records)
    }

    @Test(
        "--connections 3: the pushes spread over three connections with one provider token; one held at one stream carries few, the other two the bulk"
    )
    func connectionPool() throws {
        let tokens = (0..<600).map(APNsTestServer.token)
        let input = tokens.map { APNsTestServer.line($0) + "\n" }.joined()
        /// The answers of a run, counted by connection, and the provider tokens they carried.
        func run(_ script: [String: Any]) throws -> (byConnection: [Int: Int], authorizations: Set<String>) {
            let server = try APNsTestServer(script: script)
            let output = try server.send(["--jsonl", "--connections", "3"], stdin: input)
            #expect(output.status == 0, "\(output.stderr)")
            let results = Self.lines(output)
            #expect(results.map { $0["token"] as? String } == tokens)
            #expect(results.allSatisfy { $0["status"] as? Int == 200 })
            let answered = try server.records().filter { $0["status"] is Int }
            var byConnection: [Int: Int] = [:]
            for record in answered { byConnection[record["connection"] as? Int ?? 0, default: 0] += 1 }
            return (byConnection, Set(answered.compactMap { $0["authorization"] as? String }))
        }
        // Served alike, the three connections share the pushes.
        let even = try run([:])
        #expect(even.byConnection.keys.sorted() == [1, 2, 3], "\(even.byConnection)")
        #expect(even.byConnection.values.allSatisfy { $0 * 10 >= tokens.count }, "\(even.byConnection)")
        #expect(even.authorizations.count == 1)
        // The first connection held at one stream, each of its answers a second late: the other
        // two carry the bulk, and the run does not wait on it (600 pushes there would take 600 s).
        let held = try run(["hold_first_connection": ["delay_ms": 1000]])
        #expect(held.byConnection.keys.sorted() == [1, 2, 3], "\(held.byConnection)")
        #expect((held.byConnection[1] ?? 0) * 5 < tokens.count, "\(held.byConnection)")
        #expect((held.byConnection[2] ?? 0) * 5 >= tokens.count && (held.byConnection[3] ?? 0) * 5 >= tokens.count, "\(held.byConnection)")
        #expect(held.authorizations.count == 1)
    }

    @Test("the push's body is what JSONWriter writes for it, whether it came compact (taken as it is) or not (written again)")
    func pushBodyIsCompact() throws {
        let token = APNsTestServer.token(1)
        for push in [
            #"{"aps":{"alert":{"title":"New message"},"mutable-content":1},"kindly":{"v":1,"n":[1,2.50,-3e2,true,null]}}"#,
            #"{ "aps" : {"alert":"a b"}, "x":[ 1 , 2 ] }"#, #"{"aps":{"alert":"caf\u00e9 \"q\" \/"}}"#,
            #"{"aps":{"alert":"café, {} [] :"}}"#,
            #"{"a\u0062":1,"aps":{}}"#,
        ] {
            for document in [
                #"{"token":"\#(token)","push":\#(push)}"#, #"{"id":{"k":[1,"}"]},"push":\#(push),"token":"\#(token)"}"#,
                " {\n\"token\" : \"\(token)\" ,\t\"push\" :  \(push)  , \"collapse_id\":\"c\" } ",
            ] {
                let parsed = try Array(document.utf8).withUnsafeBytes { try APNsPush(bytes: $0) }
                let value = try #require(try JSONReader.parse(Array(document.utf8))["push"])
                #expect(parsed.body == JSONWriter.compactBytes(value), "\(document)")
            }
        }
    }

    @Test("SIGTERM: no more input is read, what was read is answered, exit 0")
    func sigtermDrains() throws {
        let server = try APNsTestServer(script: ["delay_ms": 400])
        let run = try RunningCLI(server.sendArguments(["--jsonl"]), environment: server.environment)
        run.write((0..<20).map { APNsTestServer.line(APNsTestServer.token($0)) + "\n" }.joined())
        #expect(run.waitUntil { (try? server.records().count) ?? 0 >= 1 })
        kill(run.process.processIdentifier, SIGTERM)
        // Standard input stays open: send ends of itself.
        #expect(run.finish() == 0)
        let results = run.stdout.split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
        }
        #expect(results.count == 20)
        #expect(results.allSatisfy { $0["status"] as? Int == 200 })
    }

    @Test("SIGTERM with a server that never answers: what is in flight ends as io after the drain's 10 s, and send exits")
    func sigtermBoundedDrain() throws {
        // Answers after two minutes: never, for this test. The first request's arrival is recorded.
        let server = try APNsTestServer(script: ["delay_ms": 120_000, "record_received": true])
        let run = try RunningCLI(server.sendArguments(["--jsonl"]), environment: server.environment)
        run.write((0..<3).map { APNsTestServer.line(APNsTestServer.token($0)) + "\n" }.joined())
        #expect(run.waitUntil { (try? server.records().contains { $0["note"] as? String == "received" }) ?? false })
        kill(run.process.processIdentifier, SIGTERM)
        // Without a bound it would wait 30 s a request, five attempts each.
        #expect(run.finish(seconds: 40) == 0, "\(run.stderr)")
        let results = run.stdout.split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
        }
        #expect(results.count == 3)
        for result in results {
            let error = result["error"] as? [String: Any]
            #expect(error?["code"] as? String == "io", "\(result)")
            #expect(
                (error?["message"] as? String)?.hasPrefix("stopped (SIGTERM) with no answer from APNs within 10 s") == true, "\(result)")
        }
    }

    @Test(
        "--output: a send killed outright leaves every result it had written in PATH.partial (the last maybe cut by the kill); the next run refuses to overwrite them, and a run that ends puts its results in PATH"
    )
    func outputKeepsResultsWhenKilled() throws {
        // Each answer 50 ms late: the kill lands while pushes are still being sent.
        let server = try APNsTestServer(script: ["delay_ms": 50])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-send-output-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("results.jsonl").path
        let partial = path + ".partial"
        func written() -> [String] {
            ((try? String(contentsOfFile: partial, encoding: .utf8)) ?? "").split(separator: "\n", omittingEmptySubsequences: false).map(
                String.init)
        }
        let run = try RunningCLI(server.sendArguments(["--jsonl", "--output", path]), environment: server.environment)
        run.write((0..<2000).map { APNsTestServer.line(APNsTestServer.token($0)) + "\n" }.joined())
        // More than 20 whole lines: what follows the last newline is not one.
        #expect(run.waitUntil(seconds: 10) { written().dropLast().count > 20 }, "no result written while sending: \(run.stderr)")
        kill(run.process.processIdentifier, SIGKILL)
        #expect(run.finish() == nil || !run.process.isRunning)
        let lines = written()
        // Whole lines, but for the last: a SIGKILL can stop a write between two pages (Linux
        // checks for a fatal signal at each page it copies), so what follows the last newline is
        // nothing, or the start of a result cut short (never a line that parses as another).
        if let cut = lines.last, !cut.isEmpty {
            #expect((try? JSONSerialization.jsonObject(with: Data(cut.utf8))) == nil && cut.hasPrefix("{\"token\":"), "\(cut)")
        }
        let results = lines.dropLast().map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        #expect(results.count > 20 && results.allSatisfy { $0["status"] as? Int == 200 }, "\(lines.prefix(3))")
        // Every result written is a push the server answered, in input order.
        let answered = Set(try server.records().filter { $0["status"] as? Int == 200 }.compactMap { $0["token"] as? String })
        #expect(
            results.enumerated().allSatisfy {
                $1["token"] as? String == APNsTestServer.token($0) && answered.contains(APNsTestServer.token($0))
            })
        #expect(!FileManager.default.fileExists(atPath: path))

        let refused = try server.send(["--jsonl", "--output", path], stdin: APNsTestServer.line(APNsTestServer.token(1)) + "\n")
        #expect(refused.status == 74)
        #expect(refused.stderr.contains("'\(partial)' holds the results of a run that did not finish"), "\(refused.stderr)")
        #expect(written().count == lines.count, "the killed run's results were touched")

        #expect(rename(partial, path + ".killed") == 0)
        let finished = try server.send(["--jsonl", "--output", path], stdin: APNsTestServer.line(APNsTestServer.token(1)) + "\n")
        #expect(finished.status == 0 && finished.stdout.isEmpty, "\(finished.stderr)")
        let result = try String(contentsOfFile: path, encoding: .utf8)
        #expect(result.hasPrefix("{") && result.hasSuffix("\n") && result.contains("\"status\":200"))
        #expect(!FileManager.default.fileExists(atPath: partial))
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)
    }

    @Test("a server whose TLS handshake offers no h2 is refused before anything is sent: each line io, one document exits 74")
    func serverWithoutHTTP2() throws {
        let server = try APNsTestServer(script: ["alpn": ["http/1.1"]])
        let input = APNsTestServer.line(APNsTestServer.token(1))
        let lines = try server.send(["--jsonl"], stdin: input + "\n" + input + "\n")
        #expect(lines.status == 0, "\(lines.stderr)")
        let results = Self.lines(lines)
        #expect(results.count == 2)
        for result in results {
            let error = result["error"] as? [String: Any]
            #expect(error?["code"] as? String == "io", "\(result)")
            #expect(
                (error?["message"] as? String)?.contains("does not speak HTTP/2 (its TLS handshake chose no 'h2')") == true, "\(result)")
        }
        let single = try server.send([], stdin: input)
        #expect(single.status == 74 && single.stdout.isEmpty)
        #expect(single.stderr.contains("nothing was sent to it"), "\(single.stderr)")
        #expect(try server.records().isEmpty, "a request reached the server")
    }

    @Test(
        "retry-after: the next attempt waits for it; one longer than send waits for is the result's retry_after, sent once"
    )
    func retryAfterHonoured() throws {
        let (soon, late) = (APNsTestServer.token(1), APNsTestServer.token(2))
        let server = try APNsTestServer(script: [
            "answers": [
                soon: [["status": 429, "reason": "TooManyRequests", "retry_after": 2], ["status": 200]],
                late: [["status": 503, "retry_after": 120]],
            ]
        ])
        let output = try server.send(["--jsonl"], stdin: APNsTestServer.line(soon) + "\n" + APNsTestServer.line(late) + "\n")
        #expect(output.status == 0, "\(output.stderr)")
        let results = Self.lines(output)
        try #require(results.count == 2)
        #expect(results[0]["status"] as? Int == 200)
        #expect(results[1]["status"] as? Int == 503 && results[1]["retry_after"] as? Int == 120, "\(results[1])")
        let records = try server.records()
        let soonTimes = records.filter { $0["token"] as? String == soon }.compactMap { $0["at"] as? Double }
        try #require(soonTimes.count == 2)
        #expect(soonTimes[1] - soonTimes[0] >= 2, "the second attempt came \(soonTimes[1] - soonTimes[0]) s after the first")
        #expect(records.filter { $0["token"] as? String == late }.count == 1)
        #expect(SendTiming.retryAfter(Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8), now: 784_111_767) == 10_000)
        #expect(SendTiming.retryAfter(Array("7".utf8), now: 0) == 7000)
        #expect(SendTiming.retryAfter(Array("soon".utf8), now: 0) == nil)
    }

    @Test(
        "a send worker holds an entry answered with a long retry-after: sent once, kept pending and this worker's, the other entries sent",
        .enabled(if: WireParityTests.redis != nil, "needs tools/with-redis"))
    func workerHoldsForRetryAfter() throws {
        let redis = try #require(WireParityTests.redis)
        let hot = APNsTestServer.token(99)
        let server = try APNsTestServer(script: ["answers": [hot: [["status": 429, "reason": "TooManyRequests", "retry_after": 600]]]])
        let stream = "retry-after:\(UUID().uuidString.prefix(8))"
        // The suite's redis-server through redis-cli, as the read script's tests reach it.
        let redisCLI = { (arguments: [String]) throws -> String in try RedisReadScriptTests.redisCLI(arguments) }
        _ = try redisCLI(["XADD", stream + ":in", "*", "doc", APNsTestServer.line(hot)])
        for number in 0..<10 { _ = try redisCLI(["XADD", stream + ":in", "*", "doc", APNsTestServer.line(APNsTestServer.token(number))]) }
        let run = try RunningCLI(
            server.sendArguments([
                "--redis", "redis://127.0.0.1:\(redis.port)", "--from", stream + ":in", "--group", "g", "--to", stream + ":out",
            ]), environment: server.environment.merging(["KINDLY_PUSH_REDIS_PASSWORD": redis.password]) { $1 })
        defer { kill(run.process.processIdentifier, SIGTERM) }
        #expect(run.waitUntil { (try? redisCLI(["XLEN", stream + ":out"]))?.hasPrefix("10") == true }, "\(run.stderr)")
        // Several of the worker's rounds for held entries (0.2 s, doubling) go by.
        usleep(4_000_000)
        #expect(try server.records().filter { $0["token"] as? String == hot }.count == 1)
        let pending = try redisCLI(["XPENDING", stream + ":in", "g"]).split(separator: "\n").map(String.init)
        #expect(pending.first == "1", "\(pending)")
        #expect(run.process.isRunning, "\(run.stderr)")
    }

    @Test(
        "a send worker: an entry that is no JSON gets its error object, and each entry after it its own result",
        .enabled(if: WireParityTests.redis != nil, "needs tools/with-redis"))
    func workerUnreadableEntry() throws {
        let redis = try #require(WireParityTests.redis)
        let server = try APNsTestServer()
        let stream = "unreadable:\(UUID().uuidString.prefix(8))"
        let redisCLI = { (arguments: [String]) throws -> String in try RedisReadScriptTests.redisCLI(arguments) }
        let entries = [
            APNsTestServer.line(APNsTestServer.token(1)), "not json", APNsTestServer.line(APNsTestServer.token(2)),
            #"{"token": "ab"#, APNsTestServer.line(APNsTestServer.token(3)), APNsTestServer.line(APNsTestServer.token(4)),
        ]
        for entry in entries { _ = try redisCLI(["XADD", stream + ":in", "*", "doc", entry]) }
        let run = try RunningCLI(
            server.sendArguments([
                "--redis", "redis://127.0.0.1:\(redis.port)", "--from", stream + ":in", "--group", "g", "--to", stream + ":out",
            ]), environment: server.environment.merging(["KINDLY_PUSH_REDIS_PASSWORD": redis.password]) { $1 })
        defer { kill(run.process.processIdentifier, SIGTERM) }
        #expect(run.waitUntil { (try? redisCLI(["XLEN", stream + ":out"]))?.hasPrefix("\(entries.count)") == true }, "\(run.stderr)")
        let results = try redisCLI(["XRANGE", stream + ":out", "-", "+"]).split(separator: "\n").filter { $0.hasPrefix("{") }
            .map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        try #require(results.count == entries.count, "\(results)")
        let expected: [String?] = [
            APNsTestServer.token(1), nil, APNsTestServer.token(2), nil, APNsTestServer.token(3), APNsTestServer.token(4),
        ]
        for (result, token) in zip(results, expected) {
            if let token {
                #expect(result["token"] as? String == token && result["status"] as? Int == 200, "\(result)")
            } else {
                #expect((result["error"] as? [String: Any])?["code"] as? String == "bad_input", "\(result)")
            }
        }
    }

    @Test("no server: each line's error is io after the retries; one document exits 74")
    func noServer() throws {
        let server = try APNsTestServer()
        var arguments = server.sendArguments()
        arguments[arguments.firstIndex(of: "--apns-url")! + 1] = "https://127.0.0.1:1"
        let input = APNsTestServer.line(APNsTestServer.token(1))
        let lines = try CLI.run(arguments + ["--jsonl"], stdin: input + "\n" + input + "\n")
        #expect(lines.status == 0)
        let results = Self.lines(lines)
        #expect(results.count == 2)
        #expect(results.allSatisfy { ($0["error"] as? [String: Any])?["code"] as? String == "io" })
        let single = try CLI.run(arguments, stdin: input)
        #expect(single.status == 74)
        #expect(single.stdout == "")
        #expect(single.stderr.hasPrefix("kindly-push: io: no answer from 127.0.0.1:1 after 5 attempts"))
    }

    @Test("the auth key: refused when others may read it or when it is not a P-256 key, and never quoted")
    func authKey() throws {
        let server = try APNsTestServer()
        let input = APNsTestServer.line(APNsTestServer.token(1))
        chmod(server.keyFile, 0o644)
        let open = try server.send([], stdin: input)
        #expect(open.status == 74)
        #expect(open.stderr.contains("--auth-key-file"))
        chmod(server.keyFile, 0o600)
        let secret = "-----BEGIN PRIVATE KEY-----\nTUlJQ1NFQ1JFVEtFWU1BVEVSSUFMCg==\n-----END PRIVATE KEY-----\n"
        try secret.write(toFile: server.keyFile, atomically: false, encoding: .utf8)
        let bad = try server.send([], stdin: input)
        #expect(bad.status == 74)
        #expect(
            bad.stderr
                == "kindly-push: io: the auth key '\(server.keyFile)' is not an EC P-256 private key in PEM (PKCS#8, as Apple's .p8)\n")
        #expect(!bad.stderr.contains("TUlJ"))
        #expect(try server.records().isEmpty)
    }

    @Test("usage: the required options, Apple's 10-character IDs, --apns-url's form, --expiration's range, --metrics's form")
    func usage() throws {
        let server = try APNsTestServer()
        var missing = server.sendArguments()
        missing.removeSubrange(missing.firstIndex(of: "--key-id")!...missing.firstIndex(of: "--key-id")! + 1)
        for (arguments, message) in [
            (missing, "missing '--key-id'"),
            (server.sendArguments() + ["--team-id", "x"], "'--team-id' is given twice"),
            (server.sendArguments().map { $0 == APNsTestServer.keyID ? "abc" : $0 }, "'--key-id' takes Apple's 10-character ID"),
            (server.sendArguments().map { $0 == server.url ? "http://127.0.0.1" : $0 }, "'--apns-url' takes https://HOST[:PORT]"),
            (server.sendArguments().map { $0 == server.url ? "https://[::1" : $0 }, "'--apns-url' takes https://HOST[:PORT]"),
            (server.sendArguments().map { $0 == server.url ? "https://127.0.0.1:123456" : $0 }, "'--apns-url' takes https://HOST[:PORT]"),
            (server.sendArguments(["--expiration", "-1"]), "'--expiration' takes a whole number of seconds"),
            (server.sendArguments(["--sandbox"]), "give either --sandbox or --apns-url"),
            // One document has no run to watch: --metrics goes with a stream or a worker.
            (server.sendArguments(["--metrics", "9464"]), "'--metrics' goes with --jsonl or --redis"),
            (server.sendArguments(["--jsonl", "--metrics", "127.0.0.1:0"]), "'--metrics' takes HOST:PORT or PORT"),
        ] {
            let output = try CLI.run(arguments, stdin: "")
            #expect(output.status == 64)
            #expect(output.stderr.contains(message), "\(output.stderr)")
        }
    }

    @Test("a collapse id with a C1 control, a line separator or a bidirectional control is that line's bad_input and is not sent")
    func collapseIDControls() throws {
        let server = try APNsTestServer()
        let refused = ["chat\u{85}7", "chat\u{9B}2J", "chat\u{202E}kcah", "chat\u{2066}x", "chat\u{2028}x"]
        var input = refused.enumerated().map { index, id in
            APNsTestServer.line(APNsTestServer.token(index), extra: #","collapse_id":"\#(id)""#) + "\n"
        }.joined()
        input += APNsTestServer.line(APNsTestServer.token(9), extra: #","collapse_id":"chat-é-7f3a""#) + "\n"
        let output = try server.send(["--jsonl"], stdin: input)
        #expect(output.status == 0)
        let results = Self.lines(output)
        try #require(results.count == 6)
        for index in refused.indices {
            let error = results[index]["error"] as? [String: Any]
            #expect(error?["code"] as? String == "bad_input", "\(refused[index].debugDescription): \(results[index])")
            #expect((error?["message"] as? String)?.contains("printable text") == true)
        }
        #expect(results[5]["status"] as? Int == 200)
        #expect(try server.records().map { $0["token"] as? String } == [APNsTestServer.token(9)])
    }

    @Test(
        "--apns-url takes a host and a port and nothing else: a user and password, a path, a query or a fragment are refused, never quoted")
    func apnsURLHostOnly() throws {
        let server = try APNsTestServer()
        let port = server.url.split(separator: ":").last.map(String.init) ?? ""
        for url in [
            "https://ops:s3cret-pass@127.0.0.1:\(port)", "https://127.0.0.1:\(port)?token=s3cret-pass",
            "https://127.0.0.1:\(port)#s3cret-pass",
            "https://127.0.0.1:\(port)/3/device", "https://127.0.0.1:s3cret-pass", "https://:\(port)",
        ] {
            let output = try CLI.run(
                server.sendArguments().map { $0 == server.url ? url : $0 }, stdin: APNsTestServer.line(APNsTestServer.token(1)))
            #expect(output.status == 64, "\(url): \(output.stderr)")
            #expect(output.stderr.contains("no user or password, path, query or fragment"), "\(url): \(output.stderr)")
            #expect(!output.stderr.contains("s3cret-pass"), "\(url): \(output.stderr)")
        }
        #expect(try server.records().isEmpty)
        // The forms that name a server stay accepted: a name, an IPv4 address, an IPv6 one in brackets, with a port or not.
        for url in [
            "https://api.push.apple.com", "https://api.sandbox.push.apple.com:443", "https://127.0.0.1", "https://[::1]:1", "https://[::1]",
        ] {
            #expect(SendCommand.isHostAndPort(url.dropFirst(8).utf8), "\(url)")
        }
    }

    @Test(
        "--ca-file is APNs's trust only, --redis-ca-file a rediss:// server's: each listed once, neither taken for the other, the Redis one only with rediss://"
    )
    func caFilesApart() throws {
        let help = try CLI.run(["send", "--help"])
        // Each once in the usage line and once in the list.
        for option in ["[--ca-file <path>]", "  --ca-file <path>", "[--redis-ca-file <path>]", "  --redis-ca-file <path>"] {
            #expect(help.stdout.components(separatedBy: option).count == 2, "\(option): \(help.stdout)")
        }
        let server = try APNsTestServer()
        let tokens = ["a1", "b2"].map { String(repeating: $0, count: 32) }
        let lines = tokens.map { #"{"token":"\#($0)","push":{"aps":{"alert":{"title":"t"}}}}"# }.joined(separator: "\n") + "\n"
        let sent = try CLI.run(server.sendArguments(["--jsonl"]), stdin: lines)
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(SendTests.lines(sent).map { $0["status"] as? Int } == [200, 200])
        // The Redis trust and the other TLS options go with --redis only, and with rediss:// only.
        for option in ["--tls-cert", "--redis-ca-file"] {
            let alone = try CLI.run(server.sendArguments([option, "x.pem"]), stdin: "")
            #expect(alone.status == 64 && alone.stderr.contains("'\(option)' goes with --redis"), "\(alone.stderr)")
        }
        let worker = ["--redis", "redis://127.0.0.1:1", "--from", "in", "--group", "g", "--to", "out"]
        let plain = try CLI.run(server.sendArguments(worker + ["--redis-ca-file", "x.pem"]), stdin: "")
        #expect(plain.status == 64 && plain.stderr.contains("'--redis-ca-file' goes with a rediss:// URL"), "\(plain.stderr)")
        // A rediss:// worker: APNs's file for APNs, the Redis one (or the system's) for Redis.
        func parsed(_ extra: [String]) throws -> SendOptions {
            let arguments = server.sendArguments(
                ["--redis", "rediss://10.0.0.5:6380", "--from", "in", "--group", "g", "--to", "out"] + extra)
            return try SendCommand(
                try ParsedArguments.parse(Array(arguments.dropFirst()), specs: SendCommand.options, command: SendCommand.name),
                environment: [:]
            ).options
        }
        let apnsOnly = try parsed([])
        #expect(apnsOnly.caFile == server.certificate && apnsOnly.redis?.server.tls == RedisOptions.TLS())
        let both = try parsed(["--redis-ca-file", "/etc/redis-ca.pem"])
        #expect(both.caFile == server.certificate && both.redis?.server.tls == RedisOptions.TLS(caFile: "/etc/redis-ca.pem"))
    }

    @Test(
        "--ca-file replaces the system's authorities for APNs: a server the system trusts is refused when --ca-file names another authority",
        .enabled(if: SendTests.canMountPrivately, "needs a private mount namespace (unshare -m, as root)"))
    func caFileReplacesSystemTrust() throws {
        let server = try APNsTestServer()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-system-cas-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        // The "system's" authorities, in this test's mount namespace only: the test server's, as
        // Debian keeps them (OpenSSL's default bundle and its hashed folder, both /etc/ssl/certs).
        let system = folder.appendingPathComponent("certs")
        try FileManager.default.createDirectory(at: system, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: server.certificate, toPath: system.appendingPathComponent("test-server.pem").path)
        try FileManager.default.copyItem(atPath: server.certificate, toPath: system.appendingPathComponent("ca-certificates.crt").path)
        let rehash = try CLI.run(["rehash", system.path], stdin: [], executable: URL(fileURLWithPath: "/usr/bin/openssl"))
        try #require(rehash.status == 0, "\(rehash.stderr)")
        // Another authority, which did not sign the server's certificate.
        let other = folder.appendingPathComponent("other.pem").path
        let made = try CLI.run(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=another authority", "-days",
                "1", "-keyout", folder.appendingPathComponent("other.key").path, "-out", other,
            ], stdin: [], executable: URL(fileURLWithPath: "/usr/bin/openssl"))
        try #require(made.status == 0, "\(made.stderr)")
        func send(caFile: String?) throws -> CLI.Output {
            var arguments = server.sendArguments(["--jsonl"])
            let index = arguments.firstIndex(of: "--ca-file")!
            arguments.removeSubrange(index...(index + 1))
            if let caFile { arguments += ["--ca-file", caFile] }
            let command = ([CLI.binary.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
            return try CLI.run(
                ["-m", "sh", "-c", "mount --bind '\(system.path)' /etc/ssl/certs && exec \(command)"],
                stdin: Array((APNsTestServer.line(APNsTestServer.token(1)) + "\n").utf8),
                executable: URL(fileURLWithPath: "/usr/bin/unshare"))
        }
        // Without --ca-file the system's authorities are trusted: the namespace works.
        let trusted = try send(caFile: nil)
        #expect(SendTests.lines(trusted).first?["status"] as? Int == 200, "\(trusted.stdout) \(trusted.stderr)")
        // With --ca-file naming another authority, the system's are not asked.
        let refused = try send(caFile: other)
        let error = SendTests.lines(refused).first?["error"] as? [String: Any]
        #expect(error?["code"] as? String == "io", "\(refused.stdout) \(refused.stderr)")
    }

    /// Whether this process may make a mount namespace of its own (root, or a user namespace).
    static let canMountPrivately: Bool = {
        guard let output = try? CLI.run(["-m", "true"], stdin: [], executable: URL(fileURLWithPath: "/usr/bin/unshare")) else {
            return false
        }
        return output.status == 0
    }()
}

@Suite("seal --recipients-inline carries \"token\" to send", .offThePool)
struct RecipientsInlineTokenTests {
    @Test(
        "the token (and the id) before the push, on the fast path and the strict one; a token that is not a string is bad_input; send delivers the output"
    )
    func outboxToResults() throws {
        let key = DeviceKey.generate()
        let publicKey = key.publicKey.base64URL
        let plaintext = #"{"chat_id":"c-1","title":"Anna","body":"Hi!"}"#
        let token = APNsTestServer.token(5)
        let input = [
            #"{"id":"row-1","token":"\#(token)","public_key":"\#(publicKey)","plaintext":\#(plaintext)}"#,
            #"{"token": "\#(token)", "public_key": "\#(publicKey)", "plaintext": \#(plaintext)}"#,
            #"{"public_key":"\#(publicKey)","token":7,"plaintext":\#(plaintext)}"#,
            #"{"public_key":"\#(publicKey)","plaintext":\#(plaintext)}"#,
        ].map { $0 + "\n" }.joined()
        let sealed = try CLI.run(["seal", "--jsonl", "--recipients-inline"], stdin: input)
        #expect(sealed.status == 0)
        let lines = sealed.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 4)
        #expect(lines[0].hasPrefix(#"{"id":"row-1","token":"\#(token)","push":{"aps":"#))
        #expect(lines[1].hasPrefix(#"{"token":"\#(token)","push":{"aps":"#))
        #expect(lines[2].hasPrefix(#"{"error":{"code":"bad_input","message":"\"token\" is a number, not a string"},"token":7}"#))
        #expect(lines[3].hasPrefix(#"{"aps":"#))
        // The pushes decrypt with the device's key, in the independent implementation.
        let pushes = try lines[0...1].map { try #require(try JSONValue(parsing: $0)["push"]).compactText }
        let decrypted = try ReferenceDecryption.decrypt(pushes.map { (key, $0) })
        #expect(decrypted.allSatisfy { (try? $0.get()) == (try? JSONValue(parsing: plaintext)) })
        let server = try APNsTestServer()
        let sent = try server.send(["--jsonl"], stdin: lines[0...1].map { $0 + "\n" }.joined())
        #expect(sent.status == 0)
        let results = SendTests.lines(sent)
        #expect(results.map { $0["status"] as? Int } == [200, 200])
        #expect(results.map { $0["token"] as? String } == [token, token])
        #expect(results.map { $0["id"] as? String } == ["row-1", nil])
        #expect(try server.records().count == 2)
    }
}
