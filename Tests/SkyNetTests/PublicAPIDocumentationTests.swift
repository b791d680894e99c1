import Foundation
import Testing

/// The public API is documented twice: each declaration with a `///` comment where it is, and
/// each public type in docs/API.md, the page that lists them.
struct PublicAPIDocumentationTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Every line of code under Sources/ that declares something `public`, with the lines above it.
    static func publicDeclarations() throws -> [(place: String, line: String, above: [String])] {
        let sources = repository.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }.sorted() ?? []
        var found: [(String, String, [String])] = []
        for file in files {
            let lines = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for (index, line) in lines.enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//"), code.range(of: #"\bpublic\b"#, options: .regularExpression) != nil else { continue }
                found.append(("\(file):\(index + 1)", code, Array(lines[..<index])))
            }
        }
        return found
    }

    @Test func everyPublicDeclarationHasADocComment() throws {
        let declarations = try Self.publicDeclarations()
        #expect(declarations.count > 20)
        let undocumented = declarations.filter { declaration in
            let comment = declaration.above.reversed().first { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("@") }
            return comment?.trimmingCharacters(in: .whitespaces).hasPrefix("///") != true
        }
        #expect(undocumented.isEmpty, "\(undocumented.map { "\($0.place): \($0.line)" }.joined(separator: "\n"))")
    }

    @Test func everyPublicTypeIsListedInAPIMarkdown() throws {
        let page = try String(contentsOf: Self.repository.appendingPathComponent("docs/API.md"), encoding: .utf8)
        let kind = #"\bpublic (?:final )?(?:struct|class|enum|actor|protocol) (\w+)"#
        let types = try Self.publicDeclarations().compactMap { declaration -> String? in
            guard let match = declaration.line.range(of: kind, options: .regularExpression) else { return nil }
            return declaration.line[match].split(separator: " ").last.map(String.init)
        }
        #expect(types.contains("Node") && types.contains("JobRegistry"))
        let missing = types.filter { !page.contains("`\($0)") && !page.contains(".\($0)`") }
        #expect(missing.isEmpty, "not in docs/API.md: \(missing)")
    }
}
