//go:build !linux

package rawio

import "syscall"

const available = false

func read(uintptr, []byte) (int, syscall.Errno)  { panic("rawio: not available") }
func write(uintptr, []byte) (int, syscall.Errno) { panic("rawio: not available") }
