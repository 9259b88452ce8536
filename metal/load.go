package metal

// EnvFramework names the environment variable whose value, when set, is the
// only path Load tries for the Metal framework.
const EnvFramework = "HIPGO_METAL_FRAMEWORK"

// FrameworkPath is where macOS keeps the Metal framework's binary.
const FrameworkPath = "/System/Library/Frameworks/Metal.framework/Metal"

// ObjCRuntimePath is the Objective-C runtime.
const ObjCRuntimePath = "/usr/lib/libobjc.A.dylib"
