extension Duration {
    /// The duration in seconds, as a `Double`.
    package var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}

extension Double {
    /// `5` for 5.0, `0.3` for 0.3, 9001 for 9001.0: a number (seconds, a port) as a person writes it.
    package var asWritten: String { self == rounded() && abs(self) < 1e18 ? String(Int(self)) : String(self) }
}
