package metal

import (
	"errors"
	"sync/atomic"

	"github.com/ebitengine/purego/objc"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// lib is the loaded framework: the typed message senders, the registered
// selectors and classes, and the C functions.
type lib struct {
	metal, objcLib *dynlib.Library

	send    msgSend
	sels    [numSelectors]objc.SEL
	classes map[string]objc.Class

	createSystemDefaultDevice func() objc.ID
	poolPush                  func() uintptr
	poolPop                   func(uintptr)
}

var (
	loadOnce dynlib.Once[*lib]
	current  atomic.Pointer[lib]
)

// ErrNotLoaded is returned by calls made before Load succeeded.
var ErrNotLoaded = errors.New("metal: the Metal framework is not loaded (call metal.Load first)")

// Load opens the Metal framework and the Objective-C runtime, binds the C
// functions and registers every selector and class. The first result is
// cached for the life of the process.
func Load() error {
	l, err := loadOnce.Do(load)
	if err != nil {
		return err
	}
	current.Store(l)
	return nil
}

func load() (*lib, error) {
	l := &lib{classes: map[string]objc.Class{}}
	var err error
	if l.metal, err = dynlib.Open("Metal.framework", EnvFramework, FrameworkPath); err != nil {
		return nil, err
	}
	if err := l.metal.Bind([]dynlib.Func{
		{Names: []string{"MTLCreateSystemDefaultDevice"}, Fn: &l.createSystemDefaultDevice},
	}); err != nil {
		return nil, err
	}
	if l.objcLib, err = dynlib.Open("libobjc", "HIPGO_OBJC_LIBRARY", ObjCRuntimePath); err != nil {
		return nil, err
	}
	var msgSendAddr uintptr
	if err := l.objcLib.Bind([]dynlib.Func{
		{Names: []string{"objc_msgSend"}, Addr: &msgSendAddr},
		{Names: []string{"objc_autoreleasePoolPush"}, Fn: &l.poolPush},
		{Names: []string{"objc_autoreleasePoolPop"}, Fn: &l.poolPop},
	}); err != nil {
		return nil, err
	}
	l.send.register(msgSendAddr)
	for i, name := range selectorNames {
		l.sels[i] = objc.RegisterName(name)
	}
	for _, name := range classNames {
		c := objc.GetClass(name)
		if c == 0 {
			return nil, &MissingClassError{Class: name}
		}
		l.classes[name] = c
	}
	return l, nil
}

func loaded() (*lib, error) {
	if l := current.Load(); l != nil {
		return l, nil
	}
	return nil, ErrNotLoaded
}
