#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lines to stdout and stderr, each written at once with one `write`, so that a line a
/// scan printed is out even if the process is killed right after (no stdio buffer).
enum Console {
    static func out(_ line: String) { raw(line + "\n", to: 1) }
    static func err(_ line: String) { raw(line + "\n", to: 2) }

    /// Writes `text` as it is (no newline added).
    static func raw(_ text: String, to descriptor: Int32) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                #if canImport(Glibc)
                Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                #else
                Darwin.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                #endif
            }
            if written > 0 {
                offset += written
            } else if written < 0, errno == EINTR {
                continue
            } else {
                return  // stdout closed (e.g. a pipe to `head`): drop the line, never crash
            }
        }
    }
}
