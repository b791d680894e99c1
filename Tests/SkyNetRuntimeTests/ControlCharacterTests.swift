import Testing
@testable import SkyNet
@testable import SkyNetRuntime

/// Text from outside shown on a terminal: control characters written as `\x1b`.
struct ControlCharacterEscapingTests {
    @Test func escapesC0DelAndC1AndKeepsTheRest() {
        #expect("x\u{1B}[2J\u{1B}]0;title\u{07}".escapingControlCharacters == #"x\x1b[2J\x1b]0;title\x07"#)
        #expect("a\tb\nc\rd\u{0}".escapingControlCharacters == #"a\x09b\x0ac\x0dd\x00"#)
        #expect("del\u{7F} csi\u{9B}2J nel\u{85}".escapingControlCharacters == #"del\x7f csi\x9b2J nel\x85"#)
        #expect("ünïcødé 日本語 \\ back\\slash ¡ ©".escapingControlCharacters == "ünïcødé 日本語 \\ back\\slash ¡ ©")
        #expect("plain".escapingControlCharacters == "plain")
    }
}
