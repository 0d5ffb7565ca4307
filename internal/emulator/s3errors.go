package emulator

import (
	"encoding/xml"
	"net/http"
)

// s3Error is S3's error response body.
type s3Error struct {
	XMLName            xml.Name `xml:"Error"`
	Code               string   `xml:"Code"`
	Message            string   `xml:"Message"`
	BucketName         string   `xml:"BucketName,omitempty"`
	Region             string   `xml:"Region,omitempty"`
	LocationConstraint string   `xml:"LocationConstraint,omitempty"`
	ArgumentName       string   `xml:"ArgumentName,omitempty"`
	ArgumentValue      string   `xml:"ArgumentValue,omitempty"`
	RequestID          string   `xml:"RequestId"`
	HostID             string   `xml:"HostId"`
	status             int
}

func s3Err(status int, code, message string) *s3Error {
	return &s3Error{status: status, Code: code, Message: message}
}

func (e *s3Error) bucket(name string) *s3Error {
	e.BucketName = name
	return e
}

func noSuchBucket(name string) *s3Error {
	return s3Err(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist").bucket(name)
}

func malformedXML() *s3Error {
	return s3Err(http.StatusBadRequest, "MalformedXML",
		"The XML you provided was not well-formed or did not validate against our published schema")
}

func internalError(err error) *s3Error {
	return s3Err(http.StatusInternalServerError, "InternalError", "We encountered an internal error: "+err.Error())
}

// writeS3Error writes e the way S3 does: XML body, none for HEAD.
func writeS3Error(w http.ResponseWriter, r *http.Request, requestID string, e *s3Error) {
	e.RequestID, e.HostID = requestID, "emulator"
	w.Header().Set("x-amz-request-id", requestID)
	if r.Method == http.MethodHead {
		w.WriteHeader(e.status)
		return
	}
	writeXML(w, e.status, e)
}

// writeXML writes v as an XML document with status.
func writeXML(w http.ResponseWriter, status int, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}
