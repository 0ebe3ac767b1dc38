import MirrorKit
import PostgresNIO

extension PostgresTLS {
    /// What postgres-nio takes for a connection of the pool (NIOSSL comes through PostgresNIO).
    func clientTLS() throws(MirrorError) -> PostgresClient.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(try configuration())
        case .require, .verifyCA, .verifyFull: .require(try configuration())
        }
    }

    /// The same, for the one connection that probes the server first.
    func connectionTLS() throws(MirrorError) -> PostgresConnection.Configuration.TLS {
        if mode == .disable { return .disable }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: try configuration())
        } catch let error as MirrorError {
            throw error
        } catch {
            throw .configuration("the TLS settings of the state cannot be used: \(error)")
        }
        return mode == .prefer ? .prefer(context) : .require(context)
    }

    /// The TLS a ``CleartextPasswordGuard`` sets up itself (nil for none), and whether the server
    /// must accept it.
    func relayTLS() throws(MirrorError) -> (configuration: TLSConfiguration, required: Bool)? {
        mode == .disable ? nil : (try configuration(), mode != .prefer)
    }

    private func configuration() throws(MirrorError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch roots {
        case nil:
            configuration.certificateVerification = .none
        case .system:
            configuration.trustRoots = .default
            configuration.certificateVerification = verifiesHostName ? .fullVerification : .noHostnameVerification
        case .file(let path):
            configuration.trustRoots = .file(path)
            configuration.certificateVerification = verifiesHostName ? .fullVerification : .noHostnameVerification
        }
        if let certificate, let key {
            do {
                configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) }
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            } catch {
                throw .configuration("sslcert \(certificate) and sslkey \(key) are not a PEM certificate and its key: \(error)")
            }
        }
        return configuration
    }

    /// What went wrong with TLS in `error`, a connection's failure, as one line; nil when it was
    /// not TLS.
    func problem(with error: any Error, host: String) -> String? {
        if let error = error as? PSQLError {
            if error.code == .sslUnsupported {
                return "the server does not offer TLS, and sslmode=\(mode.rawValue) requires it"
            }
            return error.underlying.flatMap { problem(with: $0, host: host) }
        }
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname {
            return "TLS: the server's certificate is not for \(host) (sslmode=verify-full checks the name it was reached by)"
        }
        if let error = error as? NIOSSLError, case .handshakeFailed(let reason) = error {
            if "\(reason)".contains("CERTIFICATE_VERIFY_FAILED") {
                let authority = switch roots {
                case .file(let path): "a certificate authority in \(path)"
                case .system, nil: "a certificate authority this system trusts"
                }
                return "TLS: the server's certificate is not signed by \(authority), or has expired"
            }
            return "TLS handshake failed: \(reason)"
        }
        return nil
    }
}
