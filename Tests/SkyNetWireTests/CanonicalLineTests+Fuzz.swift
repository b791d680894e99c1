import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetWire
@testable import SkyNetWork
import SkyNetTestSupport

/// The fast path against the general decoder over valid lines and mutations of them: what the
/// fast path takes, the general decoder reads the same way.
extension CanonicalLineTests {
    /// The general decoder, without the fast path in front of it.
    static func generalReply(_ line: Data) -> Reply? {
        guard let fields = try? WireFields(line), (try? fields.type()) == "result",
              let id = try? fields.requestID(), let task = try? fields.uuid("task"), let result = try? fields.string("result")
        else { return nil }
        return .result(id: id, task: task, result: result)
    }

    static func generalScan(_ line: Data) -> Request? {
        guard let fields = try? WireFields(line), (try? fields.type()) == "scan",
              let id = try? fields.requestID(), let task = try? fields.task(id: id) else { return nil }
        return .scan(id: id, task: task)
    }

    static let alphabet = Array(#"0123456789-+.eE"{}:,\ abcdefABCDEF"#.utf8) + [0x00, 0x0A, 0x7F, 0xC3, 0xA9, 0xFF, 0xED, 0xA0, 0x80]

    static func mutate(_ line: [UInt8], using generator: inout some RandomNumberGenerator) -> [UInt8] {
        var bytes = line
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            let at = Int.random(in: 0...bytes.count, using: &generator)
            let byte = alphabet[Int.random(in: 0..<alphabet.count, using: &generator)]
            switch Int.random(in: 0..<3, using: &generator) {
            case 0 where at < bytes.count: bytes[at] = byte
            case 1 where at < bytes.count: bytes.remove(at: at)
            default: bytes.insert(byte, at: at)
            }
        }
        return bytes
    }

    /// Lines `base` makes, whole for the first 200 rounds and mutated after, through each
    /// fast path: what one takes, its general decoder must read the same way (each check
    /// returns nil when its fast path did not take the line, else whether the two agree).
    static func expectFastPathsAgree(_ seed: FuzzSeed, rounds: Int, base: (Int, inout SeededRandom) -> [UInt8],
                                     _ checks: [(Data) -> Bool?]) {
        var generator = seed.random
        var taken = 0
        for round in 0..<rounds {
            let made = base(round, &generator)
            let line = Data(round < 200 ? made : mutate(made, using: &generator))
            for check in checks {
                guard let agreed = check(line) else { continue }
                taken += 1
                #expect(agreed, "\(seed): \(String(decoding: line, as: UTF8.self))")
            }
        }
        #expect(taken >= 200, "\(seed)")
    }

    @Test func whatTheFastPathTakesTheGeneralDecoderReadsTheSameWay() {
        let texts = ["", "ok", "42", "héllo", "a}b", "\u{7F}", "é\"", "x\\y", "日本"]
        Self.expectFastPathsAgree(FuzzSeed(0xCA40_0013), rounds: 40_000, base: { round, generator in
            func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0..<choices.count, using: &generator)] }
            let task = ScanTask(input: Int.random(in: -1000...1000, using: &generator), duration: pick([0, 0.01, 1.5, 3600, 1e-5]),
                                timeout: pick([nil, 0.5, 604_800]))
            return round.isMultiple(of: 2)
                ? Array(Reply.result(id: Int.random(in: -5...99_999, using: &generator), task: task.id, result: pick(texts)).line.dropLast())
                : Array(Request.scan(id: Int.random(in: -5...99_999, using: &generator), task: task).line.dropLast())
        }, [
            { line in CanonicalLine.result(line).map { Self.generalReply(line) == $0 } },
            { line in CanonicalLine.scan(line).map { Self.generalScan(line) == $0 } },
        ])
    }

    /// The fast paths never encode a line again to check it: they read each field only as our
    /// encoder writes it. So they must take a line exactly when encoding what it says gives
    /// back that very line, over whole lines and mutations of them (`-0`, upper-case digits,
    /// numbers written longer: the mutations' alphabet makes them).
    @Test func theFastPathTakesALineExactlyWhenOurEncoderWritesItSo() {
        var generator = FuzzSeed(0xCA40_0021).random
        var taken = 0, refused = 0
        for round in 0..<40_000 {
            func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0..<choices.count, using: &generator)] }
            let task = ScanTask(input: Int.random(in: -1000...1000, using: &generator), duration: pick([0, 0.01, 1.5, 3600, 1e-5, 0.1 + 0.2]),
                                timeout: pick([nil, 0.5, 604_800]))
            let id = Int.random(in: -5...99_999, using: &generator)
            let made = round.isMultiple(of: 2)
                ? Reply.result(id: id, task: task.id, result: pick(["", "ok", "héllo", "a}b", "\u{7F}"])).line
                : Request.scan(id: id, task: task, wait: pick([nil, 5, 0.25])).line
            let bytes = Array(made.dropLast())
            let line = Data(round < 200 ? bytes : Self.mutate(bytes, using: &generator))
            let written = line + [UInt8(ascii: "\n")]
            let fast: [UInt8]? = round.isMultiple(of: 2) ? CanonicalLine.result(line)?.line : CanonicalLine.scan(line)?.line
            let general: [UInt8]? = round.isMultiple(of: 2) ? (try? Reply.decode(line))?.line : (try? Request.decode(line))?.line
            let canonical = general.map { Data($0) == written } ?? false
            #expect((fast != nil) == canonical, "\(String(decoding: line, as: UTF8.self))")
            if let fast { #expect(Data(fast) == written) }
            if fast != nil { taken += 1 } else { refused += 1 }
        }
        #expect(taken >= 1000 && refused >= 1000, "\(taken) taken, \(refused) refused")
    }

    /// The lines written straight into a buffer are byte for byte what the general encoder
    /// writes for the same message (JSONLine, as the other messages are written).
    @Test func theHotLinesAreWrittenAsTheGeneralEncoderWritesThem() {
        var generator = FuzzSeed(0xCA40_0022).random
        func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0..<choices.count, using: &generator)] }
        for round in 0..<20_000 {
            let id = round < 4 ? [0, -1, Int.max, Int.min][round] : Int.random(in: Int.min...Int.max, using: &generator) >> Int.random(in: 0...63, using: &generator)
            let input = Int.random(in: -1_000_000...1_000_000, using: &generator)
            let task = ScanTask(input: input, duration: pick([0, 0.01, 1.5, 3600, 1e-5, 0.1 + 0.2, 1e22, .leastNonzeroMagnitude, -2.5]),
                                timeout: pick([nil, 0.5, 30, 604_800]))
            let wait = pick([nil, 5, 0.25, 604_800] as [Double?])
            // Numbers as Swift writes them: the general encoder writes them with these too.
            var digits: [UInt8] = [], number: [UInt8] = []
            JSONLine.appendInteger(id, to: &digits)
            JSONLine.appendNumber(task.duration, to: &number)
            #expect(digits == Array(String(id).utf8) && number == Array("\(task.duration)".utf8), "\(id) \(task.duration)")
            var body = JSONLine()
            body.add("id", task.id.uuidString.lowercased())
            body.add("input", task.input)
            body.add("duration", task.duration)
            if let timeout = task.timeout { body.add("timeout", timeout) }
            var scan = JSONLine(type: "scan", id: id)
            scan.add("task", object: body)
            if let wait { scan.add("wait", wait) }
            #expect(Request.scan(id: id, task: task, wait: wait).line == scan.line, "\(id) \(task) \(String(describing: wait))")

            let text = pick(["", "ok", "héllo", "quote \" and \\", "line\nbreak\u{1}", "日本", String(repeating: "x", count: 300)])
            var result = JSONLine(type: "result", id: id)
            result.add("task", task.id.uuidString.lowercased())
            result.add("result", text)
            #expect(Reply.result(id: id, task: task.id, result: text).line == result.line, "\(id) \(text)")
        }
    }
}
