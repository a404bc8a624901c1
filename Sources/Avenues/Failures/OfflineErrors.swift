import Foundation

extension Error {
    /// `true` for connectivity failures — the host cannot be found or reached, the connection was
    /// lost, the device is offline — after which an ``Avenue`` waits as "offline" (one probe at a
    /// time) instead of retrying every key. A timeout or an HTTP error is not offline.
    public var isOffline: Bool {
        guard let urlError = self as? URLError else { return false }
        switch urlError.code {
        case .notConnectedToInternet, .cannotFindHost, .cannotConnectToHost, .networkConnectionLost,
             .dnsLookupFailed, .internationalRoamingOff, .dataNotAllowed:
            return true
        default:
            return false
        }
    }
}
