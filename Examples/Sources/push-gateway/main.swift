import Foundation
import KindlyPush
import PushGateway

// push-gateway KEY_FILE < push.json: prints what the gateway decided, as JSON.
guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: push-gateway KEY_FILE < push.json\n".utf8))
    exit(64)
}
do {
    let gateway = try PushGateway(keyFile: CommandLine.arguments[1])
    let outcome = gateway.handle(FileHandle.standardInput.readDataToEndOfFile())
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    print(String(decoding: try encoder.encode(outcome), as: UTF8.self))
} catch {
    FileHandle.standardError.write(Data("push-gateway: \(error.localizedDescription)\n".utf8))
    exit(74)
}
