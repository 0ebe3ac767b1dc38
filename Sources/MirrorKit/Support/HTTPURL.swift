import FoundationEssentials

/// What mirror accepts as a URL to fetch: http or https, with a host.
package enum HTTPURL {
    package static func isValid(_ text: String) -> Bool {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return false }
        return true
    }
}
