import SkyNetRuntime

/// This machine's OS and architecture as `uname -sm` prints them (`Linux x86_64`): what a
/// shipped copy of this build needs on a host.
enum LocalPlatform {
    static let name: String = {
        var names = utsname()
        guard uname(&names) == 0 else { return "unknown" }
        func text<T>(_ field: T) -> String {
            withUnsafeBytes(of: field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        return text(names.sysname) + " " + text(names.machine)
    }()
}
