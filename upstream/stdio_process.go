package upstream

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// The stdio child's end: the shutdown sequence of Close, and reaping the child and its process group.

// Close shuts the child down as the specification advises for stdio: "the
// client SHOULD initiate shutdown by: 1. First, closing the input stream to
// the child process (the server) 2. Waiting for the server to exit, or
// sending SIGTERM if the server does not exit within a reasonable time
// 3. Sending SIGKILL if the server does not exit within a reasonable time
// after SIGTERM". Signals go to the whole process group. Close returns once
// the child is reaped and every goroutine of the connection has ended.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.stop)
		c.stdin.Close() // wakes a blocked Write too
		if !c.waitExited(c.grace) {
			c.log.Info("stdio upstream did not exit after stdin was closed; sending SIGTERM", "pid", c.pid)
			c.signalGroup(syscall.SIGTERM)
			if !c.waitExited(c.grace) {
				c.log.Warn("stdio upstream did not exit after SIGTERM; sending SIGKILL", "pid", c.pid)
				c.signalGroup(syscall.SIGKILL)
				<-c.exited
			}
		}
		c.wg.Wait()
	})
	return nil
}

func (c *stdioConn) waitExited(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

func (c *stdioConn) signalGroup(sig syscall.Signal) {
	if err := syscall.Kill(-c.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		c.log.Warn("signalling stdio upstream failed", "pid", c.pid, "signal", sig.String(), "error", err)
	}
}

// wait reaps the child as soon as it exits, then kills whatever is left of
// its process group: the child's own children would otherwise be orphans
// that may hold stdout open forever.
func (c *stdioConn) wait(stdout, stderr *os.File) {
	defer c.wg.Done()
	err := c.cmd.Wait()
	c.exitErr = err
	c.hasExited.Store(true)
	close(c.exited)
	if err != nil {
		c.log.Warn("stdio upstream exited", "pid", c.pid, "status", c.cmd.ProcessState.String())
	} else {
		c.log.Info("stdio upstream exited", "pid", c.pid, "status", c.cmd.ProcessState.String())
	}
	c.signalGroup(syscall.SIGKILL)
	// Wake readers blocked on pipes that a descendant outside the group
	// still holds; exitAwareReader re-arms the deadline on each read.
	deadline := time.Now().Add(c.grace)
	_ = stdout.SetReadDeadline(deadline)
	_ = stderr.SetReadDeadline(deadline)
}
