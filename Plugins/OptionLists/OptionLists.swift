import PackagePlugin

/// Writes each command's and option group's `options` list from its declarations
/// (Sources/OptionListGenerator), before the target compiles: an option is declared once, and
/// the list is read off the declarations at build time, not by reflection at run time (which
/// cost every one-shot run its start-up budget: docs/architecture.md, "Four binaries").
@main
struct OptionLists: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let inputs = target.sourceFiles(withSuffix: "swift").map(\.url)
        let output = context.pluginWorkDirectoryURL.appending(path: "OptionLists.swift")
        return [
            .buildCommand(
                displayName: "Listing the options of \(target.name)",
                executable: try context.tool(named: "OptionListGenerator").url,
                arguments: [output.path] + inputs.map(\.path),
                inputFiles: inputs,
                outputFiles: [output])
        ]
    }
}
