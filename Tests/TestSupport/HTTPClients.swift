import AsyncHTTPClient

/// Runs `body` with an HTTP client that is shut down however `body` ends. A client released without `shutdown()`
/// traps in a debug build (AsyncHTTPClient's deinit check), which takes the whole test process down with it: one test's
/// failed request would become a crash of every test running beside it.
public func withHTTPClient<T>(
    configuration: HTTPClient.Configuration = HTTPClient.Configuration(), _ body: (HTTPClient) async throws -> T
) async throws -> T {
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    let result: T
    do {
        result = try await body(client)
    } catch {
        try? await client.shutdown()
        throw error
    }
    try await client.shutdown()
    return result
}
