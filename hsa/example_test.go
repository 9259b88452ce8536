package hsa_test

import (
	"encoding/binary"
	"fmt"

	"github.com/hipgo/hipgo/hsa"
)

// Decoding the bytes the runtime passes to a system-event handler.
func ExampleDecodeSystemEvent() {
	b := make([]byte, hsa.SystemEventSize)
	binary.LittleEndian.PutUint32(b[0:], uint32(hsa.MemoryFaultEvent))
	binary.LittleEndian.PutUint64(b[8:], 0x5589c0a0)      // agent
	binary.LittleEndian.PutUint64(b[16:], 0x7f00deadb000) // address
	binary.LittleEndian.PutUint32(b[24:], uint32(hsa.FaultPageNotPresent))
	ev, err := hsa.DecodeSystemEvent(b)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ev)
	// Output: memory fault by agent 0x5589c0a0 at address 0x7f00deadb000: page not present or supervisor privilege
}

// A process-wide fault handler: claim only faults that were delivered.
func ExampleRegisterSystemEventHandler() {
	faults := make(chan hsa.SystemEvent, 16)
	err := hsa.RegisterSystemEventHandler(func(ev hsa.SystemEvent) bool {
		select {
		case faults <- ev: // delivered: the runtime will not abort
			return true
		default: // nobody can read it: let the runtime report it
			return false
		}
	})
	if err != nil {
		fmt.Println(err)
	}
}
