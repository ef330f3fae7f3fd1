package auth

import "github.com/magnetar-io/magnetar/internal/resources"

// subscriptionAuthMode reads subscription_auth_mode (resources does not record it yet).
func subscriptionAuthMode(resources.Policies) string { return "" }
