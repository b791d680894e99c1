import Foundation
@testable import SkyNetCluster
import SkyNetTestSupport

/// What the cluster.json suites share: parse a text, or say why it is refused.
protocol ClusterConfigParsing {}

extension ClusterConfigParsing {
    func parse(_ text: String) throws -> ClusterConfig { try ClusterConfig.parse(Data(text.utf8), file: "c.json") }

    /// The error a text is refused with; nil when it parses.
    func problem(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return "\(error)"
        }
    }
}
