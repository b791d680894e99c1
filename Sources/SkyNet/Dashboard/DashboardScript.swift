enum DashboardScript { static let hmac = "" }
