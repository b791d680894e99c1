import Dispatch
import Foundation
import SkyNet

/// Delivers SIGINT and SIGTERM as values instead of letting them kill the process.
enum Signals {
    /// Returns the first SIGINT or SIGTERM the process receives. A second one exits at once
    /// with 128 + its number.
    static func termination() async -> Int32 {
        let received = AsyncSignal<Int32>()
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if received.current != nil { exit(128 + number) }
                received.fulfil(number)
            }
            source.resume()
            return source
        }
        let number = await received.value
        withExtendedLifetime(sources) {}
        return number
    }
}
