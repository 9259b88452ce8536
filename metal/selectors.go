package metal

// selector indexes the Objective-C selectors the binding sends. The names
// live here, on every platform, so a Linux test can hold each call site in
// the darwin files to its selector's arity (one argument per colon) and
// every selector to at least one use.
type selector int

const (
	// NSObject
	selAlloc selector = iota
	selInit
	selRetain
	selRelease
	selRespondsToSelector
	// NSString, NSError
	selInitWithBytesLengthEncoding
	selUTF8String
	selCode
	selDomain
	selLocalizedDescription
	// MTLDevice
	selName
	selMaxThreadsPerThreadgroup
	selRecommendedMaxWorkingSetSize
	selHasUnifiedMemory
	selMaxThreadgroupMemoryLength
	selMaxBufferLength
	selCurrentAllocatedSize
	selRegistryID
	selSupportsFamily
	selNewBufferWithLengthOptions
	selNewCommandQueue
	selNewLibraryWithSourceOptionsError
	selNewComputePipelineStateWithFunctionError
	// MTLCompileOptions
	selSetMathMode
	selSetFastMathEnabled
	// MTLLibrary, MTLComputePipelineState
	selNewFunctionWithName
	selMaxTotalThreadsPerThreadgroup
	selThreadExecutionWidth
	selStaticThreadgroupMemoryLength
	// MTLBuffer
	selContents
	// MTLCommandQueue, MTLCommandBuffer
	selCommandBuffer
	selComputeCommandEncoder
	selCommit
	selAddCompletedHandler
	selStatus
	selError
	selWaitUntilCompleted
	selGPUStartTime
	selGPUEndTime
	// MTLComputeCommandEncoder
	selSetComputePipelineState
	selSetBufferOffsetAtIndex
	selSetBytesLengthAtIndex
	selSetThreadgroupMemoryLengthAtIndex
	selDispatchThreadgroupsThreadsPerThreadgroup
	selEndEncoding

	numSelectors
)

// selectorNames are the selectors' Objective-C names.
var selectorNames = [numSelectors]string{
	selAlloc:              "alloc",
	selInit:               "init",
	selRetain:             "retain",
	selRelease:            "release",
	selRespondsToSelector: "respondsToSelector:",

	selInitWithBytesLengthEncoding: "initWithBytes:length:encoding:",
	selUTF8String:                  "UTF8String",
	selCode:                        "code",
	selDomain:                      "domain",
	selLocalizedDescription:        "localizedDescription",

	selName:                                     "name",
	selMaxThreadsPerThreadgroup:                 "maxThreadsPerThreadgroup",
	selRecommendedMaxWorkingSetSize:             "recommendedMaxWorkingSetSize",
	selHasUnifiedMemory:                         "hasUnifiedMemory",
	selMaxThreadgroupMemoryLength:               "maxThreadgroupMemoryLength",
	selMaxBufferLength:                          "maxBufferLength",
	selCurrentAllocatedSize:                     "currentAllocatedSize",
	selRegistryID:                               "registryID",
	selSupportsFamily:                           "supportsFamily:",
	selNewBufferWithLengthOptions:               "newBufferWithLength:options:",
	selNewCommandQueue:                          "newCommandQueue",
	selNewLibraryWithSourceOptionsError:         "newLibraryWithSource:options:error:",
	selNewComputePipelineStateWithFunctionError: "newComputePipelineStateWithFunction:error:",

	selSetMathMode:        "setMathMode:",
	selSetFastMathEnabled: "setFastMathEnabled:",

	selNewFunctionWithName:           "newFunctionWithName:",
	selMaxTotalThreadsPerThreadgroup: "maxTotalThreadsPerThreadgroup",
	selThreadExecutionWidth:          "threadExecutionWidth",
	selStaticThreadgroupMemoryLength: "staticThreadgroupMemoryLength",

	selContents: "contents",

	selCommandBuffer:         "commandBuffer",
	selComputeCommandEncoder: "computeCommandEncoder",
	selCommit:                "commit",
	selAddCompletedHandler:   "addCompletedHandler:",
	selStatus:                "status",
	selError:                 "error",
	selWaitUntilCompleted:    "waitUntilCompleted",
	selGPUStartTime:          "GPUStartTime",
	selGPUEndTime:            "GPUEndTime",

	selSetComputePipelineState:                   "setComputePipelineState:",
	selSetBufferOffsetAtIndex:                    "setBuffer:offset:atIndex:",
	selSetBytesLengthAtIndex:                     "setBytes:length:atIndex:",
	selSetThreadgroupMemoryLengthAtIndex:         "setThreadgroupMemoryLength:atIndex:",
	selDispatchThreadgroupsThreadsPerThreadgroup: "dispatchThreadgroups:threadsPerThreadgroup:",
	selEndEncoding:                               "endEncoding",
}

// classNames are the Objective-C classes the binding instantiates.
var classNames = []string{"NSString", "MTLCompileOptions"}

// Constants of the Metal and Foundation headers the binding passes.
const (
	nsUTF8StringEncoding          = 4
	resourceStorageModeShared     = 0 << 4 // MTLResourceStorageModeShared
	resourceHazardTrackingDefault = 0      // MTLResourceHazardTrackingModeDefault (tracked)
	mathModeSafe                  = 0      // MTLMathModeSafe (macOS 15)
)

// GPU families supportsFamily: answers for (MTLGPUFamily), newest first.
var appleFamilies = []struct {
	family uint64
	name   string
}{
	{1009, "apple9"}, {1008, "apple8"}, {1007, "apple7"},
	{1006, "apple6"}, {1005, "apple5"}, {1004, "apple4"}, {1003, "apple3"},
	{1002, "apple2"}, {1001, "apple1"},
	{2002, "mac2"},
}
