/// The path of the running executable, to start more of ourselves (spawned nodes, the group
/// keeper): where `/proc/self/exe` leads on Linux, `_NSGetExecutablePath` on Darwin, and the
/// name we were called by when neither answers.
package func runningExecutablePath() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    #if canImport(Glibc)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    if count > 0 { return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    #else
    var size = UInt32(buffer.count)
    if _NSGetExecutablePath(&buffer, &size) == 0 { return String(cString: buffer) }
    #endif
    return CommandLine.arguments[0]
}
