extension Duration {
    /// The duration in seconds, as a `Double`.
    public var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
