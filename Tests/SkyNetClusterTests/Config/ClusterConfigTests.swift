import Foundation
@testable import SkyNet
@testable import SkyNetCluster
import SkyNetTestSupport
import Testing

struct ClusterConfigTests {
    func problem(_ text: String) -> String? {
        do {
            _ = try ClusterConfig.parse(Data(text.utf8), file: "cluster.json")
            return nil
        } catch {
            return error.description
        }
    }

    @Test(arguments: [
        ("{\n  \"nodes\": [\n    { \"name\": \"a\" \"host\": \"127.0.0.1\", \"port\": 9001 }\n  ]\n}",
         "cluster file cluster.json: not valid JSON: line 3, column 19: expected ',' or '}'"),
        ("nodes: []", "cluster file cluster.json: not valid JSON: line 1, column 1: unexpected character"),
        ("{\"nodes\": [\n]", "cluster file cluster.json: not valid JSON: line 2, column 2: expected ',' or '}'"),
        // Columns count characters, not bytes.
        ("{\"nodes\": [], \"é\": tru}", "cluster file cluster.json: not valid JSON: line 1, column 20: unexpected character"),
        ("{\"nodes\": []}\n\n  x", "cluster file cluster.json: not valid JSON: line 3, column 3: unexpected text after the value"),
    ])
    func textThatIsNotJSONIsNamedByLineAndColumn(text: String, message: String) {
        #expect(problem(text) == message)
    }

    @Test func aFileWithAByteOrderMarkIsRead() throws {
        let data = Data([0xEF, 0xBB, 0xBF] + Array(#"{"nodes":[{"name":"a","host":"127.0.0.1","port":9001}],"timeout":2}"#.utf8))
        let config = try ClusterConfig.parse(data, file: "cluster.json")
        #expect(config == ClusterConfig(nodes: [.init(name: "a", port: 9001)], timeout: 2))
    }

    @Test func jsonOfTheWrongShapeStillNamesTheField() {
        #expect(problem(#"{"nodes":[{"name":"a","host":"127.0.0.1","port":"9001"}]}"#) == "cluster file cluster.json: nodes[0].port is not an integer")
    }

    @Test(arguments: [
        (#"{"nodes":[{"name":"a","host":"127.0.0.1","port":9001.5}]}"#, "nodes[0].port is not an integer: 9001.5"),
        (#"{"nodes":[{"name":"a","host":"127.0.0.1","port":1e999}]}"#, "nodes[0].port is not an integer: 1e999 is out of range"),
        (#"{"nodes":[{"name":"a","host":"127.0.0.1","port":99999999999999999999}]}"#, "nodes[0].port is not an integer: 1e+20"),
        (#"{"nodes":[{"name":"a","host":"127.0.0.1"}]}"#, #"missing field "port" in nodes[0]"#),
        (#"{"nodes":[{"name":"a","host":"127.0.0.1","port":9001}],"timeout":1e999}"#, "timeout is out of range: 1e999"),
        ("[]", #"the top level must be an object, like {"nodes": [...]}"#),
        ("{}", #"missing field "nodes""#),
        (#"{"nodes":[7]}"#, "nodes[0] is not an object"),
    ])
    func aNumberOrShapeThatDoesNotFitNamesTheField(text: String, message: String) {
        #expect(problem(text) == "cluster file cluster.json: \(message)")
    }
}
