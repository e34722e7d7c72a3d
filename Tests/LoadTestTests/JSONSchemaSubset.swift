import Foundation

/// A JSON value as it is written: a boolean is not a number, and an integer is told apart from a fraction (which
/// `JSONSerialization`'s `NSNumber` blurs).
enum JSONValue: Decodable, Equatable {
    case null
    case bool(Bool)
    /// A number, and whether it has no fractional part.
    case number(Double, isInteger: Bool)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .number(Double(i), isInteger: true)
        } else if let u = try? c.decode(UInt64.self) {
            self = .number(Double(u), isInteger: true)
        } else if let d = try? c.decode(Double.self) {
            self = .number(d, isInteger: d.rounded() == d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    /// Parses JSON text.
    static func parse(_ data: Data) throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: data) }

    subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { o[key] } else { nil }
    }
}

/// A validator for the part of JSON Schema (2020-12) that docs/loadtest-report.schema.json uses: `type`,
/// `properties`, `required`, `additionalProperties` (false or a schema), `items`, `enum`, `minimum`,
/// `minItems`, `maxItems` and `$ref` to `#/$defs/NAME`. A keyword outside that subset is itself a problem, so
/// the schema cannot say something this validator would not check.
struct JSONSchemaSubset {
    let root: JSONValue
    /// Every schema location (`#/properties/mode`, `#/$defs/latency/properties/p99`) some value was checked
    /// against, across every ``validate(_:)``.
    private(set) var visited: Set<String> = []

    private static let assertions: Set = [
        "type", "properties", "required", "additionalProperties", "items", "enum", "minimum", "minItems", "maxItems",
        "$ref",
    ]
    private static let annotations: Set = ["$schema", "$id", "title", "description", "$comment", "$defs"]

    init(_ root: JSONValue) { self.root = root }

    /// The ways `value` breaks the schema, each with the path to the value (`/timeline/3/t`); empty if none.
    mutating func validate(_ value: JSONValue) -> [String] {
        var problems: [String] = []
        check(value, root, at: "", schemaPath: "#", &problems)
        return problems
    }

    /// Every property location the schema declares (the form of ``visited``).
    var declaredProperties: Set<String> {
        var found: Set<String> = []
        func walk(_ schema: JSONValue, _ path: String) {
            guard case .object(let o) = schema else { return }
            if case .object(let properties)? = o["properties"] {
                for (name, sub) in properties {
                    found.insert(path + "/properties/" + name)
                    walk(sub, path + "/properties/" + name)
                }
            }
            if case .object(let defs)? = o["$defs"] {
                for (name, sub) in defs { walk(sub, path + "/$defs/" + name) }
            }
            if let items = o["items"] { walk(items, path + "/items") }
            if let extra = o["additionalProperties"] { walk(extra, path + "/additionalProperties") }
        }
        walk(root, "#")
        return found
    }

    private mutating func check(
        _ value: JSONValue, _ schema: JSONValue, at path: String, schemaPath: String, _ problems: inout [String]
    ) {
        visited.insert(schemaPath)
        guard case .object(let s) = schema else {
            if schema != .bool(true) { problems.append("\(schemaPath): not a schema this validator reads") }
            return
        }
        for key in s.keys where !Self.assertions.contains(key) && !Self.annotations.contains(key) {
            problems.append("\(schemaPath): the keyword \(key) is outside the validated subset")
        }
        let at = path.isEmpty ? "/" : path
        if case .string(let ref)? = s["$ref"] {
            let name = ref.hasPrefix("#/$defs/") ? String(ref.dropFirst("#/$defs/".count)) : ""
            guard let target = root["$defs"]?[name] else {
                problems.append("\(schemaPath): $ref \(ref) names no definition")
                return
            }
            check(value, target, at: path, schemaPath: "#/$defs/" + name, &problems)
        }
        if let type = s["type"] {
            let names: [String] =
                switch type {
                case .string(let name): [name]
                case .array(let list): list.compactMap { if case .string(let n) = $0 { n } else { nil } }
                default: []
                }
            guard names.contains(where: { Self.has(value, type: $0) }) else {
                problems.append("\(at): \(Self.describe(value)) where the schema wants \(names.joined(separator: " or "))")
                return
            }
        }
        if case .array(let allowed)? = s["enum"], !allowed.contains(value) {
            problems.append("\(at): \(Self.describe(value)) is not one of the values the schema lists")
        }
        if case .number(let minimum, _)? = s["minimum"], case .number(let n, _) = value, n < minimum {
            problems.append("\(at): \(n) is below the minimum \(minimum)")
        }
        if case .array(let elements) = value {
            if case .number(let least, _)? = s["minItems"], Double(elements.count) < least {
                problems.append("\(at): \(elements.count) items, fewer than \(Int(least))")
            }
            if case .number(let most, _)? = s["maxItems"], Double(elements.count) > most {
                problems.append("\(at): \(elements.count) items, more than \(Int(most))")
            }
            if let items = s["items"] {
                for (i, element) in elements.enumerated() {
                    check(element, items, at: "\(path)/\(i)", schemaPath: schemaPath + "/items", &problems)
                }
            }
        }
        if case .object(let members) = value {
            if case .array(let required)? = s["required"] {
                for case .string(let key) in required where members[key] == nil {
                    problems.append("\(at): the required key \(key) is missing")
                }
            }
            let properties: [String: JSONValue]
            if case .object(let p)? = s["properties"] { properties = p } else { properties = [:] }
            for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                if let sub = properties[key] {
                    check(member, sub, at: "\(path)/\(key)", schemaPath: schemaPath + "/properties/" + key, &problems)
                } else if let extra = s["additionalProperties"] {
                    if extra == .bool(false) {
                        problems.append("\(at): the key \(key) is not in the schema")
                    } else {
                        check(member, extra, at: "\(path)/\(key)", schemaPath: schemaPath + "/additionalProperties",
                              &problems)
                    }
                }
            }
        }
    }

    private static func has(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("number", .number), ("string", .string), ("array", .array),
            ("object", .object):
            true
        case ("integer", .number(_, let isInteger)): isInteger
        default: false
        }
    }

    private static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let b): "\(b)"
        case .number(let n, _): "\(n)"
        case .string(let s): "\"\(s)\""
        case .array: "an array"
        case .object: "an object"
        }
    }
}
