import Foundation
import Testing
@testable import SkyNetWork

/// `--return` templates: one word of replacement strings, expanded as GNU parallel does.
struct ReturnTemplateTests {
    @Test(arguments: [
        ("{.}.png", "photos/a.jpg", "photos/a.png"), ("{.}.png", "/data/a.b.jpg", "/data/a.b.png"),
        ("{}.gz", "photos/a.jpg", "photos/a.jpg.gz"), ("{}.gz", "/data/a.jpg", "/data/a.jpg.gz"),
        ("{/.}.txt", "photos/a.jpg", "a.txt"), ("{/.}.txt", "/data/x/a.jpg", "a.txt"),
        ("out/{#}-{/}", "photos/a.jpg", "out/7-a.jpg"), ("{//}/done", "/data/a.jpg", "/data/done"),
        ("'a b'.txt", "x", "a b.txt"), ("fixed.log", "x", "fixed.log"),
    ])
    func templatesExpandOnRelativeAndAbsoluteInputs(_ template: String, _ input: String, _ expected: String) throws {
        #expect(try ReturnTemplate(template).path(input: input, sector: 7) == expected)
    }

    @Test func aTemplateWithoutPlaceholdersGetsNoInputAppended() throws {
        #expect(try ReturnTemplate("result.txt").path(input: "a", sector: 0) == "result.txt")
    }

    @Test(arguments: [("{}.a {}.b", "one word"), ("{%}.out", "{%}"), ("out/{%}/{}", "{%}"), ("", "empty"), ("''", "empty"), ("a|b", "shell")])
    func twoWordsTheSlotAndShellSyntaxAreRefused(_ template: String, _ said: String) {
        #expect { try ReturnTemplate(template) } throws: { error in
            "\(error)".contains(said)
        }
    }
}
