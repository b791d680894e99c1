import Foundation
import Testing
@testable import SkyNetWire
@testable import SkyNetWork

/// Two `--return` templates may name one file for an input (`{}.gz` and `{.}.txt.gz` of
/// `a.txt`): the plan keeps it once (the first), since a node refuses a request naming a path
/// twice and one file here can hold only one of them. Paths are the same when their
/// components are, byte for byte (`./a` is `a`; `café` in NFC and in NFD are two files).
struct TransferPlanReturnsTests {
    private func plan(_ templates: [String], input: String, transfer: Bool = true) throws -> TransferPlan {
        let spec = TransferSpec(transfer: transfer, returns: try templates.map { try ReturnTemplate($0) })
        return try spec.plan(for: ScanTask(input: 3, job: "t", text: input))
    }

    @Test func templatesNamingOneFileForAnInputReturnItOnce() throws {
        let one = try plan(["{}.gz", "{.}.txt.gz"], input: "a.txt")
        #expect(one.returns.map(\.local.text) == ["a.txt.gz"] && one.returns.map(\.node.text) == ["a.txt.gz"])
        let spelled = try plan(["{}.out", "./{}.out", "{//}//{/}.out", "{}.log"], input: "d/a")
        #expect(spelled.returns.map(\.local.text) == ["d/a.out", "d/a.log"])
        #expect(spelled.returns.map(\.node.text) == ["d/a.out", "d/a.log"])
        let absolute = try plan(["{}.gz", "/{}.gz"], input: "/data/a")
        #expect(absolute.returns.map(\.local.text) == ["/data/a.gz"] && absolute.returns.map(\.node.text) == ["data/a.gz"])
    }

    @Test func namesEqualOnlyAsCharactersAreTwoFiles() throws {
        let both = try plan(["caf\u{e9}-{}", "cafe\u{301}-{}"], input: "x", transfer: false)
        #expect(both.returns.map { Array($0.local.text.utf8) } == [Array("caf\u{e9}-x".utf8), Array("cafe\u{301}-x".utf8)])
    }

    /// One file on the node but two here (a relative and an absolute target): neither can be
    /// left out, so the task is refused, naming both.
    @Test func oneFileOnTheNodeForTwoTargetsHereIsRefused() throws {
        #expect(throws: TransferRefusal("--return {}.gz and --return data/{/}.gz both fetch data/a.gz from the node, to /data/a.gz and data/a.gz here")) {
            try plan(["{}.gz", "data/{/}.gz"], input: "/data/a")
        }
    }

    /// A node compares the paths of a request by their bytes too: NFC and NFD are two files.
    @Test func aNodeTakesNamesEqualOnlyAsCharactersButNotOneNameTwice() throws {
        func line(_ returns: String) -> String {
            #"{"type":"transfer","id":7,"job":"t","task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","sector":3,"input":"x","timeout":30},"returns":[\#(returns)]}"#
        }
        guard case .transfer(let request) = try Request.decode(Data(line("\"caf\u{e9}\",\"cafe\u{301}\"").utf8)) else {
            Issue.record("not a transfer")
            return
        }
        #expect(request.returns.count == 2)
        #expect(throws: WireError.self) { try Request.decode(Data(line("\"a\",\"a\"").utf8)) }
    }
}

/// `--basefile`s once each: the same path spelled again is one file; names equal only as
/// Swift strings are two; two paths that a node would hold at one place are refused.
struct TransferSpecBasefilesTests {
    private func distinct(_ texts: [String]) throws -> [String] {
        try TransferSpec.distinctBasefiles(texts.map { try TransferPath($0) }).map(\.text)
    }

    @Test func aPathSpelledAgainIsKeptOnce() throws {
        #expect(try distinct(["p.sh", "./p.sh", ".//p.sh", "m/x.bin", "m//./x.bin", "/abs/q"]) == ["p.sh", "m/x.bin", "/abs/q"])
    }

    @Test func namesEqualOnlyAsCharactersAreTwoFiles() throws {
        #expect(try distinct(["caf\u{e9}.sh", "cafe\u{301}.sh"]).map { Array($0.utf8) } == [Array("caf\u{e9}.sh".utf8), Array("cafe\u{301}.sh".utf8)])
    }

    @Test func twoPathsOnePlaceOnANodeAreRefused() {
        #expect(throws: TransferRefusal("--basefile /p.sh and --basefile ./p.sh would both be p.sh on a node: give one of them")) {
            try distinct(["/p.sh", "./p.sh"])
        }
    }
}

extension TransferPlanReturnsTests {
    /// An input or a return with a basefile's place on the node is refused here, for good (every
    /// node would refuse it the same way), naming both.
    @Test func anInputOrAReturnAtABasefilesPlaceIsRefusedHere() throws {
        let spec = TransferSpec(transfer: true, returns: [try ReturnTemplate("{}.out")], basefiles: [try TransferPath("./run.sh"), try TransferPath("model.bin")])
        #expect(throws: TransferRefusal("the input is run.sh on the node, the place of --basefile ./run.sh: give them different names")) {
            try spec.plan(for: ScanTask(input: 0, job: "t", text: "run.sh"))
        }
        #expect(throws: TransferRefusal("--return {}.bin is model.bin on the node, the place of --basefile model.bin: give them different names")) {
            try TransferSpec(returns: [try ReturnTemplate("{}.bin")], basefiles: [try TransferPath("model.bin")])
                .plan(for: ScanTask(input: 0, job: "t", text: "model"))
        }
        #expect(try spec.plan(for: ScanTask(input: 0, job: "t", text: "other.sh")).returns.count == 1)
    }
}
